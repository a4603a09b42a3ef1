//! The `skills` toolset: skills in the common agent-skills layout — a folder holding `SKILL.md`
//! whose YAML front matter gives `name` and `description`, then instructions — bundled
//! (`skills/` in the repository) and the user's in `$COVO_HOME/skills/NAME/`. A user skill with
//! a bundled skill's name replaces it.

use crate::error::CallError;
use crate::exec::Cx;
use crate::spec::ToolDef;
use covo_core::catalog::skills as c;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::SKILL_LIST, skill_list),
    ToolDef::local(&c::SKILL_LOAD, skill_load),
];

/// The bundled skills' `SKILL.md` files.
pub static BUNDLED: &[&str] = &[include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../skills/plant-care/SKILL.md"
))];

/// The most skill folders read from `$COVO_HOME/skills`.
pub const MAX_SKILLS: usize = 100;
/// The most bytes of one `SKILL.md`.
pub const MAX_SKILL_BYTES: u64 = 64 * 1024;
/// The most file names `skill_load` lists from a skill's folder.
const MAX_FILES: usize = 50;

/// One skill.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its `name` (lowercase letters, digits and hyphens).
    pub name: String,
    /// When to use it.
    pub description: String,
    /// The instructions: `SKILL.md` after the front matter.
    pub body: String,
    /// Its folder, for a user skill.
    pub dir: Option<PathBuf>,
}

/// Parses `SKILL.md`: front matter between `---` lines with `name` and `description` (plain,
/// quoted, or folded `>`/`|` blocks), then the body.
pub fn parse(text: &str) -> Result<Skill, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("SKILL.md does not start with YAML front matter (a '---' line)")?;
    let end = rest
        .find("\n---")
        .ok_or("the front matter has no closing '---' line")?;
    let (front, body) = (&rest[..end], &rest[end + 4..]);
    let body = body.split_once('\n').map_or("", |x| x.1);
    let lines: Vec<&str> = front.lines().collect();
    let value = |key: &str| -> Option<String> {
        let i = lines
            .iter()
            .position(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
        let v = lines[i][key.len() + 1..].trim();
        if v == ">" || v == "|" || v == ">-" || v == "|-" {
            let block: Vec<&str> = lines[i + 1..]
                .iter()
                .take_while(|l| l.starts_with(' ') || l.starts_with('\t') || l.is_empty())
                .map(|l| l.trim())
                .collect();
            let sep = if v.starts_with('>') { " " } else { "\n" };
            return Some(block.join(sep).trim().to_string());
        }
        let unq = v
            .strip_prefix('"')
            .and_then(|x| x.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|x| x.strip_suffix('\'')))
            .unwrap_or(v);
        Some(unq.to_string())
    };
    let name = value("name").ok_or("the front matter has no `name`")?;
    let description = value("description").ok_or("the front matter has no `description`")?;
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(format!(
            "name '{name}' must be 1-64 lowercase letters, digits and hyphens"
        ));
    }
    if description.is_empty() {
        return Err("`description` is empty".into());
    }
    Ok(Skill {
        name,
        description,
        body: body.trim_start_matches('\n').to_string(),
        dir: None,
    })
}

/// Every skill: bundled, then the user's (which replace bundled ones of the same name), with
/// the folders that could not be read as skills, each with why.
pub fn skills(dir: &Path) -> (Vec<Skill>, Vec<String>) {
    let mut out: Vec<Skill> = BUNDLED.iter().filter_map(|t| parse(t).ok()).collect();
    let mut problems = Vec::new();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    folders.sort();
    if folders.len() > MAX_SKILLS {
        problems.push(format!(
            "{} folders in {}: only the first {MAX_SKILLS} are read",
            folders.len(),
            dir.display()
        ));
        folders.truncate(MAX_SKILLS);
    }
    for f in folders {
        let file = f.join("SKILL.md");
        let size = std::fs::metadata(&file).map(|m| m.len());
        let parsed = match size {
            Err(_) => Err("no SKILL.md".to_string()),
            Ok(n) if n > MAX_SKILL_BYTES => Err(format!(
                "SKILL.md is larger than {} KiB",
                MAX_SKILL_BYTES / 1024
            )),
            Ok(_) => std::fs::read_to_string(&file)
                .map_err(|e| e.to_string())
                .and_then(|t| parse(&t)),
        };
        match parsed {
            Ok(mut s) => {
                s.dir = Some(f);
                out.retain(|o| o.name != s.name);
                out.push(s);
            }
            Err(why) => problems.push(format!("{}: {why}", f.display())),
        }
    }
    (out, problems)
}

fn user_dir(cx: &Cx<'_>) -> PathBuf {
    cx.home().join("skills")
}

fn skill_list(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let (all, problems) = skills(&user_dir(cx));
    let mut v = json!({
        "skills": all.iter().map(|s| json!({
            "name": s.name,
            "description": s.description,
            "source": if s.dir.is_some() { "user" } else { "bundled" },
        })).collect::<Vec<_>>(),
        "folder": user_dir(cx).display().to_string(),
    });
    if !problems.is_empty() {
        v["problems"] = json!(problems);
    }
    Ok(v)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoadArgs {
    name: String,
}

/// The files of a skill's folder besides `SKILL.md`, relative, sorted, at most [`MAX_FILES`].
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            // Symlinks are listed, never followed: a skill cannot widen what is listed.
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(dir) {
                if rel != Path::new("SKILL.md") {
                    out.push(rel.display().to_string());
                }
            }
            if out.len() >= MAX_FILES {
                out.sort();
                return out;
            }
        }
    }
    out.sort();
    out
}

fn skill_load(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let a: LoadArgs = cx.args(args)?;
    let (all, _) = skills(&user_dir(cx));
    let Some(s) = all.iter().find(|s| s.name == a.name) else {
        return Err(cx.fail(format!(
            "no skill '{}'; installed: {} (skill_list describes them)",
            a.name,
            all.iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let mut v = json!({
        "name": s.name,
        "description": s.description,
        "instructions": s.body,
    });
    if let Some(dir) = &s.dir {
        v["folder"] = json!(dir.display().to_string());
        v["files"] = json!(files(dir));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_plain_quoted_and_folded() {
        let s = parse("---\nname: plant-care\ndescription: \"Water: when dry\"\n---\n# Go\nstep\n")
            .unwrap();
        assert_eq!(s.name, "plant-care");
        assert_eq!(s.description, "Water: when dry");
        assert_eq!(s.body, "# Go\nstep\n");
        let s =
            parse("---\nname: x\ndescription: >\n  one\n  two\nlicense: MIT\n---\nbody").unwrap();
        assert_eq!(s.description, "one two");
        assert_eq!(s.body, "body");
    }

    #[test]
    fn bad_skills_say_why() {
        assert!(parse("# no front matter")
            .unwrap_err()
            .contains("front matter"));
        assert!(parse("---\nname: x\n").unwrap_err().contains("closing"));
        assert!(parse("---\ndescription: d\n---\n")
            .unwrap_err()
            .contains("`name`"));
        assert!(parse("---\nname: Plant Care\ndescription: d\n---\n")
            .unwrap_err()
            .contains("lowercase"));
        assert!(parse("---\nname: x\ndescription:\n---\n")
            .unwrap_err()
            .contains("empty"));
    }

    #[test]
    fn the_bundled_skill_parses() {
        for t in BUNDLED {
            let s = parse(t).unwrap();
            assert!(!s.body.trim().is_empty(), "{}", s.name);
        }
    }
}
