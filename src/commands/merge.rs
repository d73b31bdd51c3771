//! `dealgym merge`: join the shards, then what is missing or doubled (exit 1 if anything).

use anyhow::Result;

use crate::flags::merge::MergeFlags;

pub fn merge_command(flags: &MergeFlags) -> Result<()> {
    let report = dealgym::merge::merge(&flags.options()?)?;
    eprint!("{}", report.text());
    eprintln!(
        "{} episodes of {} runs written to {}",
        report.written,
        report.runs.len(),
        flags.out.display()
    );
    if !report.is_clean() {
        eprintln!("not the whole run: see above");
        std::process::exit(1);
    }
    Ok(())
}
