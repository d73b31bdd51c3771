//! The book carries the project's design (docs/src/architecture.md and the pages under it), so
//! it has to stay true of the tree: the architecture page names every crate of the workspace
//! and every module folder of each crate, every path it names exists, and no file cites a
//! design document outside the repository. A module added, moved or removed without the page
//! following fails here, with what to write where.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

/// The page, from the repository root.
const PAGE: &str = "docs/src/architecture.md";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A crate of the workspace: its package name and its directory (relative to the root).
struct Crate {
    name: String,
    dir: PathBuf,
}

impl Crate {
    fn src(&self) -> PathBuf {
        self.dir.join("src")
    }
}

fn package_name(manifest: &Path) -> String {
    let text = fs::read_to_string(manifest).unwrap_or_else(|e| panic!("{manifest:?}: {e}"));
    let value: toml::Value = text.parse().unwrap_or_else(|e| panic!("{manifest:?}: {e}"));
    value["package"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{manifest:?} has no package.name"))
        .to_string()
}

/// The root package and every member of `[workspace] members`.
fn workspace_crates() -> Vec<Crate> {
    let manifest = root().join("Cargo.toml");
    let text = fs::read_to_string(&manifest).expect("the root Cargo.toml");
    let value: toml::Value = text.parse().expect("the root Cargo.toml is TOML");
    let mut crates = vec![Crate {
        name: package_name(&manifest),
        dir: PathBuf::new(),
    }];
    for member in value["workspace"]["members"]
        .as_array()
        .expect("[workspace] members")
    {
        let dir = PathBuf::from(member.as_str().expect("a member is a path"));
        crates.push(Crate {
            name: package_name(&root().join(&dir).join("Cargo.toml")),
            dir,
        });
    }
    crates
}

/// Every folder under `src` (not `src` itself) that holds a Rust file, as `a/b/`.
fn module_folders(src: &Path) -> BTreeSet<String> {
    fn walk(dir: &Path, src: &Path, found: &mut BTreeSet<String>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{dir:?}: {e}"))
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        if dir != src && entries.iter().any(|p| p.extension() == Some("rs".as_ref())) {
            let rel = dir.strip_prefix(src).expect("under src");
            found.insert(format!("{}/", rel.to_string_lossy().replace('\\', "/")));
        }
        for sub in entries.iter().filter(|p| p.is_dir()) {
            walk(sub, src, found);
        }
    }
    let mut found = BTreeSet::new();
    walk(src, src, &mut found);
    found
}

/// Whether an inline-code span of the page names a path: a folder (`name/`), a file with one of
/// the project's extensions, or anything under `crates/`. Routes, flags, commands and code are
/// not paths.
fn is_path(code: &str) -> bool {
    const EXTENSIONS: [&str; 11] = [
        ".rs", ".py", ".pyi", ".toml", ".j2", ".sh", ".md", ".jsonl", ".json", ".yaml", ".yml",
    ];
    let not_a_path = code.chars().any(char::is_whitespace)
        || code.starts_with(['/', '-', '$', '[', '<', '#', '.', '{'])
        || code.contains("://")
        || code.contains(['*', '{', '…', '=', '(', ',']);
    !not_a_path
        && (code.ends_with('/')
            || code.starts_with("crates/")
            || EXTENSIONS.iter().any(|ext| code.ends_with(ext)))
}

/// One `## ` section of the page: its heading and its lines.
struct Section<'a> {
    heading: &'a str,
    lines: Vec<&'a str>,
}

fn sections(page: &str) -> Vec<Section<'_>> {
    let mut out = vec![Section {
        heading: "",
        lines: Vec::new(),
    }];
    let mut fenced = false;
    for line in page.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(heading) = line.strip_prefix("## ") {
            out.push(Section {
                heading,
                lines: Vec::new(),
            });
        } else {
            out.last_mut().expect("one at least").lines.push(line);
        }
    }
    out
}

/// What the page names in one section, resolved: a path in a bullet is looked for in the
/// folder the bullet opens with (`- \`run/\` — …`), then in the crate's `src/`, the crate's
/// directory and the repository root, the first that has it. Returns the module folders named
/// (relative to the crate's `src/`) and the spans that name nothing.
fn resolve(section: &Section<'_>, krate: Option<&Crate>) -> (BTreeSet<String>, Vec<String>) {
    let code = Regex::new(r"`([^`]+)`").expect("static regex");
    let root = root();
    let src = krate.map(|c| root.join(c.src()));
    let mut named = BTreeSet::new();
    let mut missing = Vec::new();
    let mut folder: Option<PathBuf> = None;
    for line in &section.lines {
        let bullet = line.starts_with("- ");
        if bullet || line.trim().is_empty() || !line.starts_with(' ') {
            folder = None;
        }
        for (i, m) in code.captures_iter(line).enumerate() {
            let span = &m[1];
            if !is_path(span) {
                continue;
            }
            let mut places: Vec<PathBuf> = Vec::new();
            places.extend(folder.clone());
            if let Some(c) = krate {
                places.push(root.join(c.src()));
                places.push(root.join(&c.dir));
            }
            places.push(root.clone());
            let Some(found) = places.iter().map(|p| p.join(span)).find(|p| p.exists()) else {
                missing.push(format!(
                    "`{span}` (section `{}`): no such file or folder",
                    section.heading
                ));
                continue;
            };
            if let (Some(src), true) = (&src, found.is_dir()) {
                if let Ok(rel) = found.strip_prefix(src) {
                    named.insert(format!(
                        "{}/",
                        rel.to_string_lossy()
                            .trim_end_matches('/')
                            .replace('\\', "/")
                    ));
                }
            }
            if bullet && i == 0 && found.is_dir() {
                folder = Some(found);
            }
        }
    }
    (named, missing)
}

#[test]
fn the_architecture_page_names_every_crate_and_module_folder_and_only_what_exists() {
    let page = fs::read_to_string(root().join(PAGE)).expect("the architecture page");
    let sections = sections(&page);
    let crates = workspace_crates();
    let mut problems = Vec::new();
    let mut crate_sections = BTreeSet::new();
    for krate in &crates {
        let title = format!("`{}`", krate.name);
        let Some((index, section)) = sections
            .iter()
            .enumerate()
            .find(|(_, s)| s.heading.contains(&title))
        else {
            problems.push(format!(
                "crate {title} ({}) has no section: write `## {title} (…)` with its module folders",
                if krate.dir.as_os_str().is_empty() {
                    "the repository root".to_string()
                } else {
                    krate.dir.display().to_string()
                }
            ));
            continue;
        };
        crate_sections.insert(index);
        let (named, missing) = resolve(section, Some(krate));
        problems.extend(missing);
        for folder in module_folders(&root().join(krate.src())) {
            if !named.contains(&folder) {
                problems.push(format!(
                    "module folder `{}{folder}` is not named in section `## {}`",
                    krate
                        .src()
                        .to_string_lossy()
                        .trim_start_matches("./")
                        .to_string()
                        + "/",
                    section.heading
                ));
            }
        }
    }
    for (_, section) in sections
        .iter()
        .enumerate()
        .filter(|(i, _)| !crate_sections.contains(i))
    {
        problems.extend(resolve(section, None).1);
    }
    assert!(
        problems.is_empty(),
        "{PAGE} is not true of the tree:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn no_file_cites_a_design_document_outside_the_repository() {
    // The name of the document the project started from, followed by a section sign, a
    // possessive or its file extension: a citation the book has replaced.
    let citation = Regex::new(r"\bDESIGN(\.md\b|'s\b| ?§)").expect("static regex");
    const SKIP: [&str; 5] = ["target", ".git", "book", "node_modules", ".venv"];
    const TEXT: [&str; 10] = [
        "rs", "md", "py", "pyi", "sh", "toml", "j2", "yaml", "yml", "txt",
    ];
    fn walk(dir: &Path, skip: &[&str], text: &[&str], files: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                if !skip.contains(&name.as_ref()) {
                    walk(&path, skip, text, files);
                }
            } else if path
                .extension()
                .is_some_and(|e| text.contains(&e.to_string_lossy().as_ref()))
            {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root(), &SKIP, &TEXT, &mut files);
    files.sort();
    let mut cites = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if citation.is_match(line) {
                let rel = file.strip_prefix(root()).unwrap_or(file);
                cites.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        cites.is_empty(),
        "cite the book's page (docs/src/…) instead:\n  {}",
        cites.join("\n  ")
    );
}
