//! `dealgym annotate`: write the people's thoughts, then what was annotated.

use anyhow::{bail, Result};

use super::{existing_file_notes, runtime};
use crate::flags::annotate::AnnotateFlags;
use dealgym::annotate::annotate;
use dealgym::run::Stop;

pub fn annotate_command(flags: AnnotateFlags) -> Result<()> {
    runtime()?.block_on(async {
        let options = flags.options()?;
        let summary = annotate(&options, Stop::on_signals(options.grace)).await?;
        existing_file_notes(
            &options.out,
            summary.repaired_last_line.as_ref(),
            &summary.duplicates,
        );
        eprintln!("{}", summary.text(&options.out));
        if let Some(stopped) = summary.stopped {
            std::process::exit(stopped.signal.exit_code());
        }
        if summary.failed > 0 {
            bail!(
                "{} episodes were not annotated (the endpoint failed)",
                summary.failed
            );
        }
        Ok(())
    })
}
