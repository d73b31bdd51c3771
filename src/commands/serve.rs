//! `dealgym serve` and `dealgym mock`: the two servers, until a signal.

use std::net::SocketAddr;

use anyhow::{Context, Result};

use super::{runtime, terminate};
use crate::flags::mock::MockFlags;
use crate::flags::serve::ServeFlags;

pub fn serve_command(flags: &ServeFlags) -> Result<()> {
    runtime()?.block_on(async {
        let options = flags.options()?;
        dealgym::serve::serve(options, terminate()).await
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
