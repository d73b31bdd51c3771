//! What a seat's model is sent: chat messages in the OpenAI shape.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    User,
    Assistant,
    /// The answer to one of the assistant's tool calls (`tool_call_id` names it).
    Tool,
}

impl MessageRole {
    /// The role as chat APIs and templates spell it (`system`, `user`, `assistant`).
    pub fn name(self) -> &'static str {
        match self {
            MessageRole::System => "system",
            MessageRole::User => "user",
            MessageRole::Assistant => "assistant",
            MessageRole::Tool => "tool",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    pub role: MessageRole,
    pub content: String,
    /// An assistant message's tool calls (a seat that acts through tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// A tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn new(role: MessageRole, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The answer to the tool call `id`.
    pub(crate) fn tool_result(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(id.into()),
            ..Message::new(MessageRole::Tool, content)
        }
    }
}

/// One tool call, in the OpenAI shape (`{"id", "type": "function", "function": {"name",
/// "arguments"}}`): a call a chat endpoint returned, or one a client made over MCP. The
/// arguments are the JSON text as the model wrote it, so a call whose arguments cannot be read
/// is kept as it came. Read from outside with [`ToolCall::read`], which takes any call a model
/// or client sends; the strict form is what records hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

/// The function a tool call names and its arguments (JSON text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    /// The `index`-th call of a reply, as a model or a client sent it, whatever its shape: the
    /// arguments as JSON text, an object (written as its JSON) or absent (none); an id, or
    /// `call_{index}`; the name under `function` (or at the top, as MCP names it), or empty. A
    /// call that makes no sense is still a call — the engine's reader says what is wrong with
    /// it, as a malformed turn — never a failed request.
    pub fn read(call: &serde_json::Value, index: usize) -> ToolCall {
        use serde_json::Value;
        let function = call.get("function").unwrap_or(call);
        let name = match function.get("name") {
            Some(Value::String(name)) => name.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let arguments = match function.get("arguments") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        let id = match call.get("id") {
            Some(Value::String(id)) if !id.is_empty() => id.clone(),
            _ => format!("call_{index}"),
        };
        ToolCall::new(id, name, arguments)
    }

    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn any_call_a_model_sends_is_read_and_none_fails() {
        let strict = json!({"id": "c1", "type": "function", "function": {"name": "accept", "arguments": "{}"}});
        assert_eq!(
            ToolCall::read(&strict, 0),
            ToolCall::new("c1", "accept", "{}")
        );
        assert_eq!(
            serde_json::to_value(ToolCall::read(&strict, 0)).unwrap(),
            strict
        );
        for (call, want) in [
            (
                json!({"function": {"name": "make_offer", "arguments": {"terms": {"price": 3}}}}),
                ToolCall::new("call_2", "make_offer", r#"{"terms":{"price":3}}"#),
            ),
            (
                json!({"id": "", "function": {"name": "reject", "arguments": null}}),
                ToolCall::new("call_2", "reject", ""),
            ),
            (
                json!({"name": "say", "arguments": {"text": "hi"}}),
                ToolCall::new("call_2", "say", r#"{"text":"hi"}"#),
            ),
            (
                json!({"function": {"name": 7}}),
                ToolCall::new("call_2", "7", ""),
            ),
            (json!("accept"), ToolCall::new("call_2", "", "")),
        ] {
            assert_eq!(ToolCall::read(&call, 2), want, "{call}");
        }
    }
}
