//! The `messaging` toolset.

use crate::error::CallError;
use crate::exec::Cx;
use crate::secrets::{http_error, redact_endpoint};
use crate::spec::{AvailCx, Availability, ToolDef};
use covo_core::catalog::messaging as c;
use covo_wire::mqtt::QoS;
use serde_json::{json, Value};
use std::time::Duration;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::local(&c::CHANNEL_LIST, channel_list),
    ToolDef::local(&c::NOTIFY, notify).when(notify_channel),
];

/// `notify` goes out on the MQTT topic or the webhook: it needs one of them.
fn notify_channel(cx: &AvailCx<'_>) -> Availability {
    if cx.mqtt_configured() || cx.config.notify.webhook.is_some() {
        Availability::yes()
    } else {
        Availability::no("no MQTT broker configured")
    }
}

/// How long the webhook POST may take.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

fn channel_list(cx: &Cx<'_>, _args: Value) -> Result<Value, CallError> {
    let mut out: Vec<Value> = cx
        .user_io()
        .channels()
        .into_iter()
        .map(|(name, connected)| json!({"channel": name, "connected": connected}))
        .collect();
    let mqtt = cx.config().mqtt.is_some();
    let connected = cx.peer_connected();
    out.push(json!({"channel": "mqtt", "configured": mqtt, "connected": connected}));
    let hook = cx.config().notify.webhook.is_some();
    // A webhook has no connection: it is "connected" when configured; each send reports itself.
    out.push(json!({"channel": "webhook", "configured": hook, "connected": hook}));
    Ok(json!({"channels": out}))
}

fn notify(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let message = args["message"].as_str().unwrap_or_default();
    let priority = args["priority"].as_str().unwrap_or("normal");
    let mut body = json!({
        "message": message,
        "priority": priority,
        "at": crate::store::now_rfc3339(),
    });
    if let Some(t) = args["title"].as_str() {
        body["title"] = json!(t);
    }
    let mut sent = Vec::new();
    let mut failed = Vec::new();
    if cx.config().mqtt.is_some() {
        let link = cx.peer_link()?;
        let topic = format!("{}/{}/notify", link.prefix(), link.gateway_id());
        match link.publish(
            &topic,
            body.to_string().into_bytes(),
            QoS::AtLeastOnce,
            false,
        ) {
            Ok(()) => sent.push(json!({"channel": "mqtt", "topic": topic})),
            Err(e) => failed.push(json!({"channel": "mqtt", "error": e})),
        }
    }
    if let Some(url) = cx.config().notify.webhook.clone() {
        match post_json(&url, &body) {
            Ok(status) => sent.push(json!({"channel": "webhook", "status": status})),
            Err(e) => failed.push(json!({"channel": "webhook", "error": e})),
        }
    }
    if sent.is_empty() {
        return Err(cx.fail(if failed.is_empty() {
            "no notification channel is configured ([mqtt] or [notify] webhook)".to_string()
        } else {
            format!("every channel failed: {}", Value::Array(failed))
        }));
    }
    Ok(json!({"sent": sent, "failed": failed}))
}

/// POSTs `body` as JSON on a thread of its own (the caller may be inside a tokio runtime). An
/// error names the webhook by its host alone ([`redact_endpoint`]): a webhook URL carries its
/// token in the path (Slack, Discord), the userinfo or the query, and the error goes to the
/// model, the audit log and the logs.
fn post_json(url: &str, body: &Value) -> Result<u16, String> {
    let (url, text) = (url.to_string(), body.to_string());
    let shown = redact_endpoint(&url);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .timeout(WEBHOOK_TIMEOUT)
                .build()
                .map_err(http_error)?;
            let resp = client
                .post(&url)
                .header("content-type", "application/json")
                .body(text)
                .send()
                .await
                .map_err(|e| format!("{shown}: {}", http_error(e)))?;
            let status = resp.status();
            if status.is_success() {
                Ok(status.as_u16())
            } else {
                Err(format!("{shown}: HTTP {status}"))
            }
        })
    })
    .join()
    .map_err(|_| "the webhook thread panicked".to_string())?
}
