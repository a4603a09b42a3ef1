//! The one dispatch pipeline, exercised through the public API: every bad call is a structured
//! error the model can act on, and `tool_call` gets no way around the profile, validation,
//! policy or approval.

use covo::config::Config;
use covo::error::{CallError, ToolError};
use covo::exec::Session;
use covo::runtime::{Runtime, Via};
use covo::store::Store;
use serde_json::{json, Value};

fn runtime_with(config: Config, profile: &str) -> Runtime {
    let mut opts = covo::tools::options(config);
    opts.profile = Some(profile.into());
    Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap())
}

fn runtime(profile: &str) -> Runtime {
    runtime_with(Config::default(), profile)
}

fn session() -> Session {
    Session::new("t1", "cli")
}

fn respond(r: Result<Value, CallError>) -> ToolError {
    match r {
        Err(CallError::Respond(e)) => e,
        other => panic!("expected a respond-to-model error, got {other:?}"),
    }
}

#[test]
fn an_unknown_tool_is_a_structured_error_with_suggestions() {
    let rt = runtime("full");
    let e = respond(rt.call_raw(&session(), Via::Direct, "tool_serch", "{}"));
    match &e {
        ToolError::UnknownTool { tool, did_you_mean } => {
            assert_eq!(tool, "tool_serch");
            assert!(
                did_you_mean.iter().any(|n| n == "tool_search"),
                "{did_you_mean:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    let j = e.to_json();
    assert_eq!(j["error"]["kind"], "unknown_tool");
    assert!(j["error"]["message"]
        .as_str()
        .unwrap()
        .contains("tool_serch"));
}

#[test]
fn a_tool_pruned_by_the_profile_is_refused_by_name() {
    let rt = runtime("minimal");
    let e = respond(rt.call_raw(&session(), Via::Direct, "tool_search", r#"{"query":"x"}"#));
    assert_eq!(
        e,
        ToolError::NotInProfile {
            tool: "tool_search".into(),
            profile: "minimal".into()
        }
    );
}

#[test]
fn malformed_json_arguments_are_a_structured_error() {
    let rt = runtime("full");
    let e = respond(rt.call_raw(&session(), Via::Direct, "tool_search", r#"{"query": "x""#));
    assert!(
        matches!(e, ToolError::MalformedJson { ref tool, .. } if tool == "tool_search"),
        "{e:?}"
    );
}

#[test]
fn wrong_types_name_the_field_and_what_was_expected() {
    let rt = runtime("full");
    let e = respond(rt.call_raw(
        &session(),
        Via::Direct,
        "tool_search",
        r#"{"query": 3, "limit": "many"}"#,
    ));
    let ToolError::InvalidArguments { problems, .. } = e else {
        panic!("{e:?}")
    };
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert!(
        paths.contains(&"/query") && paths.contains(&"/limit"),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.problem.contains("string")),
        "{problems:?}"
    );
}

#[test]
fn a_missing_required_field_is_named() {
    let rt = runtime("full");
    let e = respond(rt.call(&session(), Via::Direct, "tool_describe", json!({})));
    let msg = e.to_string();
    assert!(msg.contains("name"), "{msg}");
}

#[test]
fn an_unavailable_tool_says_why_and_never_runs() {
    // A peer tool without a broker: unavailable, with the reason, through every path.
    let rt = runtime("full");
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "web_fetch",
        json!({"url": "https://example.com"}),
    ));
    assert_eq!(
        e,
        ToolError::Unavailable {
            tool: "web_fetch".into(),
            reason: "no MQTT broker configured".into()
        }
    );
}

#[test]
fn tool_call_cannot_reach_a_tool_pruned_by_the_profile() {
    let rt = runtime("edge");
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "tool_call",
        json!({"name": "shell_exec", "arguments": {"command": "echo hi"}}),
    ));
    assert_eq!(
        e,
        ToolError::NotInProfile {
            tool: "shell_exec".into(),
            profile: "edge".into()
        }
    );
}

#[test]
fn tool_call_validates_the_inner_arguments() {
    let rt = runtime("full");
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "tool_call",
        json!({"name": "tool_search", "arguments": {"limit": 3}}),
    ));
    assert!(
        matches!(e, ToolError::InvalidArguments { ref tool, .. } if tool == "tool_search"),
        "{e:?}"
    );
}

#[test]
fn tool_call_cannot_nest_itself() {
    let rt = runtime("full");
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "tool_call",
        json!({"name": "tool_call", "arguments": {"name": "tool_search", "arguments": {"query": "gpio"}}}),
    ));
    assert!(e.to_string().contains("nested"), "{e}");
}

#[test]
fn tool_call_runs_an_owned_tool_and_returns_its_result() {
    let rt = runtime("edge");
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "tool_call",
            json!({"name": "tool_search", "arguments": {"query": "scan the i2c bus"}}),
        )
        .unwrap();
    assert_eq!(v["results"][0]["name"], "i2c_scan");
}

#[test]
fn search_never_returns_a_tool_the_profile_prunes() {
    for profile in ["minimal", "edge", "coding", "messaging"] {
        let rt = runtime(profile);
        for q in [
            "run a shell command",
            "scan i2c",
            "kanban card",
            "read a file",
            "publish mqtt",
            "temperature",
        ] {
            for hit in rt.search_index().search(q, 20) {
                assert!(
                    rt.owned().owns(hit.tool.name),
                    "{profile}: '{q}' returned {}",
                    hit.tool.name
                );
            }
        }
    }
    let rt = runtime("edge");
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "tool_search",
            json!({"query": "run a shell command", "limit": 20}),
        )
        .unwrap();
    assert!(v["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["name"] != "shell_exec"));
}

#[test]
fn tool_search_defaults_to_five_results_and_caps_at_twenty() {
    let rt = runtime("full");
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "tool_search",
            json!({"query": "read"}),
        )
        .unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 5);
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "tool_search",
        json!({"query": "read", "limit": 21}),
    ));
    assert!(matches!(e, ToolError::InvalidArguments { .. }));
    let r = &v["results"][0];
    assert!(
        r["name"].is_string()
            && r["score"].is_number()
            && r["available"].is_boolean()
            && r["summary"].is_string()
    );
}

#[test]
fn tool_describe_returns_the_full_definition_but_not_for_pruned_tools() {
    let rt = runtime("edge");
    let v = rt
        .call(
            &session(),
            Via::Direct,
            "tool_describe",
            json!({"name": "gpio_write"}),
        )
        .unwrap();
    assert_eq!(v["name"], "gpio_write");
    assert_eq!(v["effect"], "actuate");
    assert!(v["parameters"]["properties"].is_object());
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "tool_describe",
        json!({"name": "git_commit"}),
    ));
    assert!(matches!(e, ToolError::NotInProfile { .. }));
}

#[test]
fn every_call_is_audited_with_its_path() {
    let rt = runtime("edge");
    let _ = rt.call(
        &session(),
        Via::Direct,
        "tool_call",
        json!({"name": "tool_search", "arguments": {"query": "gpio"}}),
    );
    let _ = rt.call(&session(), Via::Direct, "nope", json!({}));
    let rows: Vec<(String, String, String)> = {
        let conn = rt.store().unwrap().conn();
        let mut st = conn
            .prepare("SELECT tool, via, outcome FROM audit ORDER BY id")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(
        rows,
        [
            (
                "tool_search".to_string(),
                "tool_call".to_string(),
                "ok".to_string()
            ),
            ("tool_call".into(), "direct".into(), "ok".into()),
            ("nope".into(), "direct".into(), "unknown_tool".into()),
        ]
    );
}

/// Answers every question with a fixed word.
struct Answers(&'static str);

impl covo::runtime::UserIo for Answers {
    fn send(&self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn ask(&self, _: &str, _: &[String]) -> Option<String> {
        Some(self.0.to_string())
    }
    fn channels(&self) -> Vec<(String, bool)> {
        vec![("cli".into(), true)]
    }
}

#[test]
fn plan_mode_refuses_writes_on_every_path_until_the_plan_is_accepted() {
    let mut opts = covo::tools::options(Config::default());
    opts.user_io = Box::new(Answers("accept"));
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    let s = session();
    rt.call(
        &s,
        Via::Direct,
        "plan_update",
        json!({"steps": ["note the vent position"]}),
    )
    .unwrap();
    let store_it = json!({"text": "vent sticks"});
    let e = respond(rt.call(&s, Via::Direct, "memory_store", store_it.clone()));
    assert!(
        matches!(&e, ToolError::PolicyRefused { rule, .. } if rule == "plan_mode"),
        "{e:?}"
    );
    let e = respond(rt.call(
        &s,
        Via::Direct,
        "tool_call",
        json!({"name": "memory_store", "arguments": store_it.clone()}),
    ));
    assert!(
        matches!(&e, ToolError::PolicyRefused { rule, .. } if rule == "plan_mode"),
        "{e:?}"
    );
    // Reads still work while planning.
    rt.call(&s, Via::Direct, "memory_recall", json!({"query": "vent"}))
        .unwrap();
    rt.call(&s, Via::Direct, "exit_plan_mode", json!({}))
        .unwrap();
    rt.call(&s, Via::Direct, "memory_store", store_it).unwrap();
}

/// Stands in for the peer's backends in `RuntimeOptions::local_peer`: serves `plot_series` and
/// `code_run` and records what reaches it.
struct LocalHost(std::sync::Mutex<Vec<Value>>);

impl covo_wire::host::ToolHost for LocalHost {
    fn tools(&self) -> Vec<String> {
        vec!["plot_series".into(), "code_run".into()]
    }

    fn call(
        &self,
        tool: &str,
        args: Value,
        _deadline: std::time::Instant,
    ) -> Result<Value, ToolError> {
        self.0.lock().unwrap().push(args.clone());
        Ok(json!({ "ran": tool }))
    }
}

#[test]
fn with_a_local_peer_peer_tools_run_in_process_after_validation_and_policy() {
    let host = std::sync::Arc::new(LocalHost(Default::default()));
    // An [mqtt] section that goes nowhere: nothing may be forwarded to it.
    let mut config = Config::default();
    config.mqtt = Some(covo::config::MqttConfig {
        url: Some("mqtt://127.0.0.1:1".into()),
        ..Default::default()
    });
    config.policy.read_only = true;
    let mut opts = covo::tools::options(config);
    opts.local_peer = Some(covo::runtime::LocalPeer {
        host: host.clone(),
        timeout: std::time::Duration::from_secs(5),
    });
    let rt = Runtime::new(opts)
        .unwrap()
        .with_store(Store::in_memory().unwrap());
    let av = |t: &str| rt.availability(rt.lookup(t).unwrap());
    assert!(av("plot_series").available);
    assert!(av("code_run").available);
    let fetch = av("web_fetch");
    assert!(!fetch.available);
    assert_eq!(fetch.reason.as_deref(), Some("this peer does not serve it"));
    let args = json!({"series": [{"label": "t", "points": [[0, 1]]}]});
    let v = rt
        .call(&session(), Via::Direct, "plot_series", args.clone())
        .unwrap();
    assert_eq!(v, json!({"ran": "plot_series"}));
    // Validation runs before the host: a bad call never reaches it.
    let e = respond(rt.call(&session(), Via::Direct, "plot_series", json!({"x": 1})));
    assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e:?}");
    // So does policy: read-only refuses a write peer tool before the host sees it.
    let e = respond(rt.call(
        &session(),
        Via::Direct,
        "code_run",
        json!({"language": "shell", "code": "true"}),
    ));
    assert!(matches!(e, ToolError::PolicyRefused { .. }), "{e:?}");
    assert_eq!(*host.0.lock().unwrap(), vec![args]);
}
