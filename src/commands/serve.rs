//! `dealgym serve` and `dealgym mock`: the two servers, until a signal.

use std::net::SocketAddr;

use anyhow::{Context, Result};

use super::{runtime, terminate};
use crate::flags::mock::MockFlags;
use crate::flags::serve::{PlayCommandFlags, ServeFlags};

pub fn serve_command(flags: &ServeFlags) -> Result<()> {
    runtime()?.block_on(async {
        let options = flags.options()?;
        dealgym::serve::serve(options, terminate()).await
    })
}

/// `dealgym play`: the server with its play page on; unless `--no-mock`, the built-in mock
/// endpoint in this process, offered at the page (with `rule:linear` when no
/// `--play-opponent` is given).
pub fn play_command(flags: &PlayCommandFlags) -> Result<()> {
    runtime()?.block_on(async {
        let mut options = flags.serve.options()?;
        let play = options.play.get_or_insert_with(Default::default);
        if play.opponents.is_empty() && play.study.is_none() {
            play.opponents.push("rule:linear".into());
        }
        let mock = if flags.no_mock {
            None
        } else {
            let mock = dealgym_mock::MockServer::start(
                SocketAddr::from(([127, 0, 0, 1], 0)),
                Default::default(),
            )
            .await
            .context("starting the built-in mock endpoint")?;
            play.opponents
                .push(format!("openai:mock@{}", mock.base_url()));
            options
                .policy
                .endpoints
                .push(format!("http://{}", mock.addr));
            Some(mock)
        };
        let url = format!("http://{}/play", options.addr);
        eprintln!("dealgym play: open {url}");
        let served = dealgym::serve::serve(options, terminate()).await;
        if let Some(mock) = mock {
            mock.stop();
        }
        served
    })
}

pub fn mock_command(flags: MockFlags) -> Result<()> {
    let (host, port) = (flags.host, flags.port);
    runtime()?.block_on(async {
        dealgym_mock::serve(SocketAddr::new(host, port), flags.behaviour.into())
            .await
            .with_context(|| format!("serving on {host}:{port}"))
    })
}
