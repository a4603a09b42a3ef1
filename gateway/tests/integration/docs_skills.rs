//! `docs_search`, `docs_read`, `skill_list` and `skill_load` through the CLI and the whole
//! pipeline: the bundled pages and skill, and a user's own in `$COVO_HOME`.

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

fn call(dir: &Path, tool: &str, args: Value) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_covo"));
    cmd.args(["tools", "call", tool, &args.to_string()])
        .current_dir(dir)
        .env("COVO_HOME", dir.join("home"))
        .env_remove("COVO_CONFIG");
    covo_tests::bins::json(&mut cmd)
}

fn pages(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| r["page"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn docs_search_finds_the_page_a_maker_needs() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("what address does the bme280 use", "bme280"),
        ("BMP280 chip id has no humidity", "bme280"),
        ("CO2 sensor SCD41 measurement", "scd4x"),
        ("OLED display 128x64 wiring", "ssd1306"),
        ("analog voltage ADC channels gain", "ads1115"),
        ("relay board active low flyback diode", "gpio_out"),
        ("fan speed pwm 25 kHz", "pwm"),
        ("clock stretching bug on the Pi I2C", "i2c-basics"),
        ("spidev transfer larger than 4096 bytes", "spi-basics"),
        ("mini UART bluetooth ttyS0", "serial-basics"),
        ("pico serial number ttyACM renumbering", "mcu"),
        ("raspberry pi 5 RP1 gpiochip", "rpi5"),
        ("light sensor lux", "bh1750"),
    ];
    let mut top1 = 0;
    for (q, want) in cases {
        let (code, v) = call(dir.path(), "docs_search", json!({"query": q, "limit": 3}));
        assert_eq!(code, 0, "{v}");
        let got = pages(&v);
        assert!(
            got.iter().any(|p| p == want),
            "{q}: {want} in top 3 of {got:?}"
        );
        top1 += usize::from(got[0] == want);
        let r = &v["results"][0];
        assert!(!r["title"].as_str().unwrap().is_empty());
        assert!(!r["snippet"].as_str().unwrap().is_empty(), "{r}");
    }
    assert!(top1 >= 11, "{top1} of 13 at rank 1");
}

#[test]
fn docs_read_gives_a_page_or_one_section_and_says_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = call(dir.path(), "docs_read", json!({"page": "bme280"}));
    assert_eq!(code, 0, "{v}");
    assert!(v["text"].as_str().unwrap().starts_with("# "));
    assert!(v["text"].as_str().unwrap().contains("0x76"));
    let (_, v) = call(
        dir.path(),
        "docs_read",
        json!({"page": "i2c-basics", "section": "clock stretching"}),
    );
    let text = v["text"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(text.starts_with("## "), "{text}");
    assert!(!text[3..].contains("\n## "), "one section only: {text}");
    let (code, v) = call(dir.path(), "docs_read", json!({"page": "bme281"}));
    assert_ne!(code, 0);
    let m = v["error"]["message"].as_str().unwrap();
    assert!(
        m.contains("no page 'bme281'") && m.contains("bme280"),
        "{m}"
    );
    let (_, v) = call(
        dir.path(),
        "docs_read",
        json!({"page": "bme280", "section": "nonexistent"}),
    );
    let m = v["error"]["message"].as_str().unwrap();
    assert!(m.contains("its sections") && m.contains("Wiring"), "{m}");
}

#[test]
fn a_users_own_pages_are_searched_and_read_beside_the_bundled_ones() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("home/docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("greenhouse.md"),
        "# Greenhouse wiring\nOur greenhouse.\n\n## Pump\nThe irrigation pump hangs off relay K2 on GPIO17.\n\n## Vents\nServo on PWM0.\n",
    )
    .unwrap();
    std::fs::write(docs.join("huge.md"), "x".repeat(300 * 1024)).unwrap();
    let (_, v) = call(
        dir.path(),
        "docs_search",
        json!({"query": "irrigation pump relay greenhouse"}),
    );
    assert_eq!(pages(&v)[0], "user/greenhouse", "{v}");
    assert_eq!(v["results"][0]["section"], "Pump");
    let problems = v["problems"].to_string();
    assert!(
        problems.contains("huge.md") && problems.contains("not searched"),
        "{v}"
    );
    let (_, v) = call(
        dir.path(),
        "docs_read",
        json!({"page": "user/greenhouse", "section": "pump"}),
    );
    assert!(v["text"].as_str().unwrap().contains("GPIO17"), "{v}");
}

#[test]
fn skills_bundled_and_the_users_own_are_listed_loaded_and_bad_ones_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (code, v) = call(dir.path(), "skill_list", json!({}));
    assert_eq!(code, 0, "{v}");
    let plant = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "plant-care")
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(plant["source"], "bundled");
    let (_, v) = call(dir.path(), "skill_load", json!({"name": "plant-care"}));
    let text = v["instructions"].as_str().unwrap();
    assert!(
        text.contains("sensor_read") && text.contains("gpio_write"),
        "{text}"
    );

    let skills = dir.path().join("home/skills");
    std::fs::create_dir_all(skills.join("door-check/scripts")).unwrap();
    std::fs::write(
        skills.join("door-check/SKILL.md"),
        "---\nname: door-check\ndescription: >\n  Check the door sensor\n  every evening\n---\n# Door check\nRead GPIO27 with gpio_read.\n",
    )
    .unwrap();
    std::fs::write(skills.join("door-check/scripts/report.sh"), "echo ok\n").unwrap();
    std::fs::create_dir_all(skills.join("broken")).unwrap();
    std::fs::write(skills.join("broken/SKILL.md"), "no front matter\n").unwrap();
    std::fs::create_dir_all(skills.join("empty")).unwrap();
    let (_, v) = call(dir.path(), "skill_list", json!({}));
    let door = v["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "door-check")
        .unwrap_or_else(|| panic!("{v}"))
        .clone();
    assert_eq!(door["source"], "user");
    assert_eq!(door["description"], "Check the door sensor every evening");
    let problems = v["problems"].to_string();
    assert!(
        problems.contains("broken") && problems.contains("front matter"),
        "{v}"
    );
    assert!(
        problems.contains("empty") && problems.contains("no SKILL.md"),
        "{v}"
    );
    let (_, v) = call(dir.path(), "skill_load", json!({"name": "door-check"}));
    assert_eq!(
        v["instructions"],
        "# Door check\nRead GPIO27 with gpio_read.\n"
    );
    assert_eq!(v["files"], json!(["scripts/report.sh"]));
    let (code, v) = call(dir.path(), "skill_load", json!({"name": "nope"}));
    assert_ne!(code, 0);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("door-check"),
        "{v}"
    );
}
