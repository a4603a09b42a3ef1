//! The turn state machine: no I/O, no clock, no sockets. The driver in `agent/mod.rs` asks it what
//! to do next, does it, and feeds the result back. Every path leaves the history valid for the
//! next request: each tool call the model made gets exactly one result, even on cancellation.

use super::textcalls;
use crate::llm::{ChatResponse, Message, ToolCall};
use serde_json::json;

/// What the driver should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Call the model with the history.
    CallModel,
    /// Run these tool calls and report their results.
    RunTools(Vec<ToolCall>),
    /// The turn is over.
    Finish(Outcome),
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model gave a final answer.
    Answer(String),
    /// The step budget ran out before a final answer.
    StepBudget {
        /// Model calls made.
        steps: usize,
    },
    /// The user cancelled the turn.
    Cancelled,
    /// The model or the gateway failed; the message says how.
    Failed(String),
}

/// One tool call's result, as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The call's id.
    pub call_id: String,
    /// The result JSON text, or the structured error JSON.
    pub content: String,
    /// Whether it is an error.
    pub is_error: bool,
}

/// The state of one user turn.
#[derive(Debug)]
pub struct Turn {
    steps: usize,
    max_steps: usize,
    pending: Vec<ToolCall>,
    text_calls: usize,
    repairs: usize,
    max_repairs: usize,
}

/// Tool calls per turn that may fail validation and go back to the model, unless configured.
pub const DEFAULT_MAX_REPAIRS: usize = 3;

/// Whether a result is a call the model got wrong (no such tool, unreadable or invalid
/// arguments): the kind of error it is asked to repair.
fn is_bad_call(r: &ToolResult) -> bool {
    if !r.is_error {
        return false;
    }
    let v: serde_json::Value = serde_json::from_str(&r.content).unwrap_or_default();
    matches!(
        v["error"]["kind"].as_str(),
        Some("unknown_tool" | "malformed_json" | "invalid_arguments")
    )
}

impl Turn {
    /// A turn that may call the model at most `max_steps` times.
    pub fn new(max_steps: usize) -> Turn {
        Turn {
            steps: 0,
            max_steps: max_steps.max(1),
            pending: Vec::new(),
            text_calls: 0,
            repairs: 0,
            max_repairs: DEFAULT_MAX_REPAIRS,
        }
    }

    /// Sets how many bad calls (see [`Turn::on_tool_results`]) the turn sends back to the model.
    pub fn with_max_repairs(mut self, n: usize) -> Turn {
        self.max_repairs = n;
        self
    }

    /// Model calls made so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Records the user's message and asks for the first model call.
    pub fn start(&mut self, history: &mut Vec<Message>, user: &str) -> Action {
        history.push(Message::User(user.to_string()));
        self.call_model()
    }

    fn call_model(&mut self) -> Action {
        if self.steps >= self.max_steps {
            return Action::Finish(Outcome::StepBudget { steps: self.steps });
        }
        self.steps += 1;
        Action::CallModel
    }

    /// Takes the model's response: tool calls to run, or the final answer. Tool calls written
    /// into the text by small models are recognised here.
    pub fn on_model_response(&mut self, history: &mut Vec<Message>, resp: ChatResponse) -> Action {
        let (text, mut calls) = if resp.tool_calls.is_empty() {
            let (rest, calls) = textcalls::extract(&resp.text, self.text_calls);
            self.text_calls += calls.len();
            (rest, calls)
        } else {
            (resp.text, resp.tool_calls)
        };
        // Ids must be unique within the history's turn for the result to find its call.
        for i in 0..calls.len() {
            if calls[..i].iter().any(|c| c.id == calls[i].id) || calls[i].id.is_empty() {
                calls[i].id = format!("{}_{i}", calls[i].id);
            }
        }
        history.push(Message::Assistant {
            text: text.clone(),
            tool_calls: calls.clone(),
        });
        if calls.is_empty() {
            return Action::Finish(Outcome::Answer(text));
        }
        self.pending = calls.clone();
        Action::RunTools(calls)
    }

    /// Takes the results of the pending calls (any order; missing ones are filled in as errors)
    /// and asks for the next model call, unless the budget is spent. Bad calls (an unknown tool,
    /// arguments that are not JSON or fail the schema) go back to the model with their error to
    /// be fixed, `max_repairs` of them per turn; one more ends the turn, so a model that cannot
    /// write a valid call does not spend the whole step budget trying.
    pub fn on_tool_results(
        &mut self,
        history: &mut Vec<Message>,
        results: Vec<ToolResult>,
    ) -> Action {
        self.repairs += results.iter().filter(|r| is_bad_call(r)).count();
        self.record(history, results, "no result was produced");
        if self.repairs > self.max_repairs {
            return Action::Finish(Outcome::Failed(format!(
                "the model made {} tool calls that failed validation in this turn (at most {} \
                 are sent back to be fixed; [agent] max_repairs); a larger model, or \
                 [llm] tool_calls = \"constrained\", may do better",
                self.repairs, self.max_repairs
            )));
        }
        self.call_model()
    }

    /// The model call failed: the turn ends with the error.
    pub fn on_model_error(&mut self, message: String) -> Action {
        Action::Finish(Outcome::Failed(message))
    }

    /// A fatal error while running tools: results are recorded, the turn ends.
    pub fn on_fatal(
        &mut self,
        history: &mut Vec<Message>,
        results: Vec<ToolResult>,
        message: String,
    ) -> Action {
        self.record(history, results, "the gateway failed before this call ran");
        Action::Finish(Outcome::Failed(message))
    }

    /// The user cancelled: pending calls get a `cancelled` result so the history stays valid.
    pub fn cancel(&mut self, history: &mut Vec<Message>) -> Action {
        self.record(history, Vec::new(), "cancelled by the user");
        Action::Finish(Outcome::Cancelled)
    }

    fn record(&mut self, history: &mut Vec<Message>, mut results: Vec<ToolResult>, missing: &str) {
        for call in std::mem::take(&mut self.pending) {
            let r = match results.iter().position(|r| r.call_id == call.id) {
                Some(i) => results.swap_remove(i),
                None => ToolResult {
                    call_id: call.id.clone(),
                    content: json!({"error": {"kind": "cancelled", "message": missing}})
                        .to_string(),
                    is_error: true,
                },
            };
            history.push(Message::ToolResult {
                call_id: call.id,
                name: call.name,
                content: r.content,
                is_error: r.is_error,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{StopReason, Usage};

    fn answer(text: &str) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            tool_calls: vec![],
            usage: Usage::default(),
            stop: StopReason::EndTurn,
        }
    }

    fn calls(names: &[&str]) -> ChatResponse {
        ChatResponse {
            text: String::new(),
            tool_calls: names
                .iter()
                .enumerate()
                .map(|(i, n)| ToolCall {
                    id: format!("c{i}"),
                    name: n.to_string(),
                    arguments: "{}".into(),
                })
                .collect(),
            usage: Usage::default(),
            stop: StopReason::ToolUse,
        }
    }

    fn ok(id: &str) -> ToolResult {
        ToolResult {
            call_id: id.into(),
            content: "{}".into(),
            is_error: false,
        }
    }

    #[test]
    fn a_turn_with_two_tool_calls_ends_in_an_answer() {
        let mut h = Vec::new();
        let mut t = Turn::new(8);
        assert_eq!(t.start(&mut h, "hi"), Action::CallModel);
        let Action::RunTools(c) = t.on_model_response(&mut h, calls(&["a", "b"])) else {
            panic!()
        };
        assert_eq!(c.len(), 2);
        // Results in any order are matched to their calls and recorded in call order.
        assert_eq!(
            t.on_tool_results(&mut h, vec![ok("c1"), ok("c0")]),
            Action::CallModel
        );
        assert_eq!(
            t.on_model_response(&mut h, answer("done")),
            Action::Finish(Outcome::Answer("done".into()))
        );
        assert_eq!(h.len(), 5);
        assert!(matches!(&h[2], Message::ToolResult { call_id, .. } if call_id == "c0"));
        assert_eq!(t.steps(), 2);
    }

    #[test]
    fn the_step_budget_stops_a_model_that_never_answers() {
        let mut h = Vec::new();
        let mut t = Turn::new(3);
        let mut a = t.start(&mut h, "loop");
        let mut calls_made = 0;
        while a == Action::CallModel {
            calls_made += 1;
            assert!(matches!(
                t.on_model_response(&mut h, calls(&["x"])),
                Action::RunTools(_)
            ));
            a = t.on_tool_results(&mut h, vec![ok("c0")]);
        }
        assert_eq!(calls_made, 3);
        assert_eq!(a, Action::Finish(Outcome::StepBudget { steps: 3 }));
        // Every call still has its result.
        let results = h
            .iter()
            .filter(|m| matches!(m, Message::ToolResult { .. }))
            .count();
        assert_eq!(results, 3);
    }

    #[test]
    fn cancelling_fills_pending_results_so_the_history_stays_valid() {
        let mut h = Vec::new();
        let mut t = Turn::new(4);
        t.start(&mut h, "go");
        t.on_model_response(&mut h, calls(&["slow", "slower"]));
        assert_eq!(t.cancel(&mut h), Action::Finish(Outcome::Cancelled));
        let results: Vec<_> = h
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 2);
        assert!(results.iter().all(|(c, e)| *e && c.contains("cancelled")));
    }

    #[test]
    fn bad_calls_go_back_to_be_fixed_a_bounded_number_of_times() {
        let bad = |id: &str| {
            ToolResult {
            call_id: id.into(),
            content: json!({"error": {"kind": "invalid_arguments", "message": "pin: expected an integer"}})
                .to_string(),
            is_error: true,
        }
        };
        let refused = |id: &str| ToolResult {
            call_id: id.into(),
            content: json!({"error": {"kind": "policy_refused", "message": "no"}}).to_string(),
            is_error: true,
        };
        let mut h = Vec::new();
        let mut t = Turn::new(16).with_max_repairs(2);
        t.start(&mut h, "go");
        // Two bad calls: both go back to the model.
        t.on_model_response(&mut h, calls(&["x"]));
        assert_eq!(
            t.on_tool_results(&mut h, vec![bad("c0")]),
            Action::CallModel
        );
        t.on_model_response(&mut h, calls(&["x"]));
        assert_eq!(
            t.on_tool_results(&mut h, vec![bad("c0")]),
            Action::CallModel
        );
        // Other errors and successes do not count.
        t.on_model_response(&mut h, calls(&["x", "y"]));
        assert_eq!(
            t.on_tool_results(&mut h, vec![refused("c0"), ok("c1")]),
            Action::CallModel
        );
        // The third ends the turn, with every call answered in the history.
        t.on_model_response(&mut h, calls(&["x"]));
        let a = t.on_tool_results(&mut h, vec![bad("c0")]);
        let Action::Finish(Outcome::Failed(m)) = a else {
            panic!("{a:?}")
        };
        assert!(m.contains("3 tool calls that failed validation"), "{m}");
        let calls_made = h
            .iter()
            .map(|m| match m {
                Message::Assistant { tool_calls, .. } => tool_calls.len(),
                _ => 0,
            })
            .sum::<usize>();
        let results = h
            .iter()
            .filter(|m| matches!(m, Message::ToolResult { .. }))
            .count();
        assert_eq!(calls_made, results);
    }

    #[test]
    fn duplicate_or_empty_ids_are_made_unique() {
        let mut h = Vec::new();
        let mut t = Turn::new(4);
        t.start(&mut h, "go");
        let mut r = calls(&["a", "b"]);
        r.tool_calls[1].id = "c0".into();
        let Action::RunTools(c) = t.on_model_response(&mut h, r) else {
            panic!()
        };
        assert_ne!(c[0].id, c[1].id);
    }

    #[test]
    fn text_embedded_calls_from_small_models_run_as_tool_calls() {
        let mut h = Vec::new();
        let mut t = Turn::new(4);
        t.start(&mut h, "temp?");
        let a = t.on_model_response(
            &mut h,
            answer("<tool_call>{\"name\":\"sensor_read\",\"arguments\":{\"sensor\":\"climate\"}}</tool_call>"),
        );
        let Action::RunTools(c) = a else {
            panic!("{a:?}")
        };
        assert_eq!(c[0].name, "sensor_read");
    }
}
