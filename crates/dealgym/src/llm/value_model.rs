//! A value model behind HTTP (issue 26 part 4): one POST per turn of
//! `{"state": TEXT, "candidates": [TEXT, …]}` to the configured URL, answered with
//! `{"values": [NUMBER, …]}`, one per candidate in order. Retried like any call
//! ([`LlmClient::post_json`]: timeouts, 429 and 5xx with backoff). `dealgym mock` serves one at
//! `/v1/value`.

use serde::Serialize;

use super::client::{EndpointSettings, LlmClient, LlmError};

/// The request body.
#[derive(Debug, Serialize)]
pub(crate) struct ValueRequest<'a> {
    /// [`crate::planner::state_text`] for the seat to move.
    pub state: &'a str,
    pub candidates: &'a [&'a str],
}

/// A value-model endpoint.
#[derive(Debug, Clone)]
pub struct ValueModelClient {
    client: LlmClient,
    url: String,
}

impl ValueModelClient {
    pub(crate) fn new(http: reqwest::Client, url: &str) -> Result<ValueModelClient, LlmError> {
        let settings = EndpointSettings {
            base_url: url.to_string(),
            model: "value".into(),
            ..EndpointSettings::default()
        };
        Ok(ValueModelClient {
            client: LlmClient::new(http, settings)?,
            url: url.to_string(),
        })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One value per candidate. An answer without exactly one finite number per candidate is
    /// an error like a failed call (never a guess).
    pub(crate) async fn values(
        &self,
        state: &str,
        candidates: &[&str],
    ) -> Result<Vec<f64>, LlmError> {
        let request = ValueRequest { state, candidates };
        let url = &self.url;
        let (values, _retries) = self
            .client
            .post_json(url, &request, |bytes| {
                read_values(bytes, candidates.len()).map_err(|message| LlmError::BadResponse {
                    url: url.clone(),
                    message,
                })
            })
            .await?;
        Ok(values)
    }
}

/// The values of an answer, checked against the number of candidates asked about.
pub(crate) fn read_values(bytes: &[u8], expected: usize) -> Result<Vec<f64>, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        values: Vec<f64>,
    }
    let answer: Answer = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a value-model answer ({{\"values\": [numbers]}}): {e}"))?;
    if answer.values.len() != expected {
        return Err(format!(
            "{} values for {expected} candidates",
            answer.values.len()
        ));
    }
    if let Some(bad) = answer.values.iter().find(|v| !v.is_finite()) {
        return Err(format!("a value is not a finite number: {bad}"));
    }
    Ok(answer.values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_has_one_finite_value_per_candidate() {
        assert_eq!(read_values(br#"{"values":[0.5,1]}"#, 2), Ok(vec![0.5, 1.0]));
        assert!(read_values(br#"{"values":[0.5]}"#, 2)
            .unwrap_err()
            .contains("1 values for 2"));
        assert!(read_values(br#"{"score":1}"#, 1).is_err());
    }
}
