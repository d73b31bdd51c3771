//! A crate's public surface is a decision, not an accident: every item another crate can name
//! is listed, one path a line, in a committed file beside the crate (`crates/core/public-api.txt`
//! for `dealgym-core`, `crates/dealgym/public-api.txt` for the runtime), and an item made
//! public, or no longer public, without the list following fails here with the lines that
//! differ. After a deliberate change, rewrite the list with
//! `DEALGYM_BLESS=1 cargo test --test integration public_api::` and commit it with the change.
//!
//! The list is read from the sources with `syn` (stable Rust has no rustdoc JSON): from `lib.rs`,
//! through `pub mod` and `pub use` (re-exports resolved inside the crate, globs included), every
//! item declared `pub` and reachable by a public path: modules, functions, types, traits,
//! constants, statics, exported macros; and the members of a reachable type: its `pub` fields,
//! its variants, its trait's items and the `pub` methods and constants of its inherent impls,
//! wherever they are written. `pub(crate)`, `pub(super)` and `pub(in …)` items, items in
//! private modules that no public path re-exports, `#[cfg(test)]` items and `#[doc(hidden)]`
//! items (the test fixtures) are not listed. An item reachable by several paths is listed
//! once, under the path nearest its definition, and each other path is a line
//! `path: re-export of that`. Trait implementations are not listed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One module of the crate: its items as written, where its children live.
struct Module {
    /// Path from the crate root (empty for the root).
    path: Vec<String>,
    parent: Option<usize>,
    /// Child modules by name, with whether each is declared `pub`.
    children: BTreeMap<String, (usize, bool)>,
    defs: Vec<Def>,
    uses: Vec<Use>,
}

/// An item declared in a module (not a module, a `use` or an impl).
struct Def {
    name: String,
    kind: &'static str,
    public: bool,
    /// Fields, variants and trait items another crate can name.
    members: Members,
}

/// One name a `use` declaration brings in (a group is flattened).
struct Use {
    public: bool,
    segments: Vec<String>,
    /// The name it is known by here; `None` for a glob.
    alias: Option<String>,
}

/// What a path resolves to inside the crate, or outside it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    Module(usize),
    Def(usize, usize),
    External(String),
}

/// Members another crate can name: (name, kind).
type Members = Vec<(String, &'static str)>;

#[derive(Default)]
struct Crate {
    modules: Vec<Module>,
    /// An inherent impl's `pub` methods and constants: (module of the impl, self type path, members).
    impls: Vec<(usize, Vec<String>, Members)>,
}

fn is_public(vis: &syn::Visibility) -> bool {
    matches!(vis, syn::Visibility::Public(_))
}

/// `#[cfg(test)]` and `#[doc(hidden)]` items are no part of the surface.
fn left_out(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| match &attr.meta {
        syn::Meta::List(list) => {
            let tokens = list.tokens.to_string();
            (list.path.is_ident("cfg") && tokens == "test")
                || (list.path.is_ident("doc") && tokens == "hidden")
        }
        _ => false,
    })
}

fn exported_macro(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|attr| attr.path().is_ident("macro_export"))
}

fn path_segments(path: &syn::Path) -> Vec<String> {
    let mut segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    if path.leading_colon.is_some() {
        segments.insert(0, String::new());
    }
    segments
}

fn flatten_use(tree: &syn::UseTree, prefix: &mut Vec<String>, public: bool, out: &mut Vec<Use>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, public, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let (segments, alias) = if name == "self" {
                (prefix.clone(), prefix.last().cloned().unwrap_or_default())
            } else {
                let mut segments = prefix.clone();
                segments.push(name.clone());
                (segments, name)
            };
            out.push(Use {
                public,
                segments,
                alias: Some(alias),
            });
        }
        syn::UseTree::Rename(r) => {
            let mut segments = prefix.clone();
            segments.push(r.ident.to_string());
            out.push(Use {
                public,
                segments,
                alias: Some(r.rename.to_string()),
            });
        }
        syn::UseTree::Glob(_) => out.push(Use {
            public,
            segments: prefix.clone(),
            alias: None,
        }),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix, public, out);
            }
        }
    }
}

fn fields(fields: &syn::Fields) -> Members {
    fields
        .iter()
        .enumerate()
        .filter(|(_, f)| is_public(&f.vis) && !left_out(&f.attrs))
        .map(|(i, f)| {
            let name = f.ident.as_ref().map_or(i.to_string(), |id| id.to_string());
            (name, "field")
        })
        .collect()
}

impl Crate {
    /// Reads the crate whose root file is `src/lib.rs`.
    fn read(src: &Path) -> Crate {
        let mut krate = Crate::default();
        let file = src.join("lib.rs");
        let items = parse(&file);
        krate.add_module(Vec::new(), None, &items, src.to_path_buf());
        krate
    }

    /// Adds a module whose items are `items` and whose `mod x;` children live in `dir`.
    fn add_module(
        &mut self,
        path: Vec<String>,
        parent: Option<usize>,
        items: &[syn::Item],
        dir: PathBuf,
    ) -> usize {
        let index = self.modules.len();
        self.modules.push(Module {
            path: path.clone(),
            parent,
            children: BTreeMap::new(),
            defs: Vec::new(),
            uses: Vec::new(),
        });
        for item in items {
            let (name, kind, vis, attrs, members) = match item {
                syn::Item::Const(i) => (i.ident.to_string(), "const", &i.vis, &i.attrs, vec![]),
                syn::Item::Static(i) => (i.ident.to_string(), "static", &i.vis, &i.attrs, vec![]),
                syn::Item::Fn(i) => (i.sig.ident.to_string(), "fn", &i.vis, &i.attrs, vec![]),
                syn::Item::Type(i) => (i.ident.to_string(), "type", &i.vis, &i.attrs, vec![]),
                syn::Item::Struct(i) => {
                    let members = fields(&i.fields);
                    (i.ident.to_string(), "struct", &i.vis, &i.attrs, members)
                }
                syn::Item::Union(i) => {
                    let members = fields(&syn::Fields::Named(i.fields.clone()));
                    (i.ident.to_string(), "union", &i.vis, &i.attrs, members)
                }
                syn::Item::Enum(i) => {
                    let members = i
                        .variants
                        .iter()
                        .filter(|v| !left_out(&v.attrs))
                        .map(|v| (v.ident.to_string(), "variant"))
                        .collect();
                    (i.ident.to_string(), "enum", &i.vis, &i.attrs, members)
                }
                syn::Item::Trait(i) => {
                    let members = i
                        .items
                        .iter()
                        .filter_map(|t| match t {
                            syn::TraitItem::Fn(f) if !left_out(&f.attrs) => {
                                Some((f.sig.ident.to_string(), "trait method"))
                            }
                            syn::TraitItem::Const(c) if !left_out(&c.attrs) => {
                                Some((c.ident.to_string(), "trait const"))
                            }
                            syn::TraitItem::Type(t) if !left_out(&t.attrs) => {
                                Some((t.ident.to_string(), "trait type"))
                            }
                            _ => None,
                        })
                        .collect();
                    (i.ident.to_string(), "trait", &i.vis, &i.attrs, members)
                }
                syn::Item::Macro(m) if exported_macro(&m.attrs) && !left_out(&m.attrs) => {
                    if let Some(ident) = &m.ident {
                        // An exported macro lives at the crate root, whatever module writes it.
                        self.modules[0].defs.push(Def {
                            name: ident.to_string(),
                            kind: "macro",
                            public: true,
                            members: vec![],
                        });
                    }
                    continue;
                }
                syn::Item::Use(u) => {
                    if !left_out(&u.attrs) {
                        let mut flat = Vec::new();
                        let mut prefix = Vec::new();
                        if u.leading_colon.is_some() {
                            prefix.push(String::new());
                        }
                        flatten_use(&u.tree, &mut prefix, is_public(&u.vis), &mut flat);
                        self.modules[index].uses.extend(flat);
                    }
                    continue;
                }
                syn::Item::Impl(i) => {
                    if i.trait_.is_none() && !left_out(&i.attrs) {
                        if let syn::Type::Path(ty) = &*i.self_ty {
                            let members = i
                                .items
                                .iter()
                                .filter_map(|m| match m {
                                    syn::ImplItem::Fn(f)
                                        if is_public(&f.vis) && !left_out(&f.attrs) =>
                                    {
                                        Some((f.sig.ident.to_string(), "method"))
                                    }
                                    syn::ImplItem::Const(c)
                                        if is_public(&c.vis) && !left_out(&c.attrs) =>
                                    {
                                        Some((c.ident.to_string(), "assoc const"))
                                    }
                                    _ => None,
                                })
                                .collect();
                            self.impls.push((index, path_segments(&ty.path), members));
                        }
                    }
                    continue;
                }
                syn::Item::Mod(m) => {
                    if left_out(&m.attrs) {
                        continue;
                    }
                    let name = m.ident.to_string();
                    let child_dir = dir.join(&name);
                    let child_items = match &m.content {
                        Some((_, items)) => items.clone(),
                        None => {
                            let flat = dir.join(format!("{name}.rs"));
                            let file = if flat.exists() {
                                flat
                            } else {
                                child_dir.join("mod.rs")
                            };
                            parse(&file)
                        }
                    };
                    let mut child_path = path.clone();
                    child_path.push(name.clone());
                    let child = self.add_module(child_path, Some(index), &child_items, child_dir);
                    self.modules[index]
                        .children
                        .insert(name, (child, is_public(&m.vis)));
                    continue;
                }
                _ => continue,
            };
            if left_out(attrs) {
                continue;
            }
            self.modules[index].defs.push(Def {
                name,
                kind,
                public: is_public(vis),
                members,
            });
        }
        index
    }

    /// A name as seen inside module `m`: a child module, an item, or a name a `use` brings in.
    fn lookup(&self, m: usize, name: &str, depth: usize) -> Option<Target> {
        if depth > 32 {
            return None;
        }
        let module = &self.modules[m];
        if let Some((child, _)) = module.children.get(name) {
            return Some(Target::Module(*child));
        }
        if let Some(d) = module.defs.iter().position(|d| d.name == name) {
            return Some(Target::Def(m, d));
        }
        for u in &module.uses {
            if u.alias.as_deref() == Some(name) {
                return Some(self.resolve(m, &u.segments, depth + 1));
            }
        }
        for u in module.uses.iter().filter(|u| u.alias.is_none()) {
            if let Target::Module(g) = self.resolve(m, &u.segments, depth + 1) {
                if g != m {
                    if let Some(found) = self.lookup(g, name, depth + 1) {
                        return Some(found);
                    }
                }
            }
        }
        None
    }

    /// A path as written in module `m` (`crate::`, `self::`, `super::`, a name in scope, or
    /// another crate).
    fn resolve(&self, m: usize, segments: &[String], depth: usize) -> Target {
        let external = || Target::External(segments.join("::"));
        let Some((first, rest)) = segments.split_first() else {
            return Target::Module(m);
        };
        let mut current = match first.as_str() {
            "" => return external(),
            "crate" => Target::Module(0),
            "self" => Target::Module(m),
            "super" => Target::Module(self.modules[m].parent.unwrap_or(0)),
            name => match self.lookup(m, name, depth) {
                Some(found) => found,
                None => return external(),
            },
        };
        for segment in rest {
            current = match (&current, segment.as_str()) {
                (Target::Module(mm), "super") => {
                    Target::Module(self.modules[*mm].parent.unwrap_or(0))
                }
                (Target::Module(mm), "self") => Target::Module(*mm),
                (Target::Module(mm), name) => match self.lookup(*mm, name, depth) {
                    Some(found) => found,
                    None => return external(),
                },
                (Target::External(_), _) => return external(),
                // A variant or an associated item: named through its type.
                (Target::Def(..), _) => return current,
            };
        }
        current
    }

    /// Every public path, with what it names: `pub mod`s, `pub` items and `pub use`s, from
    /// the root down (each module once per path that reaches it).
    fn public_paths(&self) -> Vec<(Vec<String>, Target)> {
        let mut found = Vec::new();
        let mut seen = BTreeSet::new();
        self.walk(0, Vec::new(), &mut found, &mut seen);
        found
    }

    fn walk(
        &self,
        m: usize,
        prefix: Vec<String>,
        found: &mut Vec<(Vec<String>, Target)>,
        seen: &mut BTreeSet<(usize, Vec<String>)>,
    ) {
        if prefix.len() > 16 || !seen.insert((m, prefix.clone())) {
            return;
        }
        let at = |name: &str| {
            let mut path = prefix.clone();
            path.push(name.to_string());
            path
        };
        let module = &self.modules[m];
        for (name, (child, public)) in &module.children {
            if *public {
                found.push((at(name), Target::Module(*child)));
                self.walk(*child, at(name), found, seen);
            }
        }
        for (d, def) in module.defs.iter().enumerate() {
            if def.public {
                found.push((at(&def.name), Target::Def(m, d)));
            }
        }
        for u in module.uses.iter().filter(|u| u.public) {
            let target = self.resolve(m, &u.segments, 0);
            match (&u.alias, target) {
                (Some(alias), Target::Module(child)) => {
                    found.push((at(alias), Target::Module(child)));
                    self.walk(child, at(alias), found, seen);
                }
                (Some(alias), target) => found.push((at(alias), target)),
                // A glob re-exports what is public in its module, under this one.
                (None, Target::Module(g)) => {
                    self.walk(g, prefix.clone(), found, seen);
                }
                (None, Target::Def(dm, dd)) => {
                    for (variant, _) in &self.modules[dm].defs[dd].members {
                        found.push((at(variant), Target::External(format!("variant {variant}"))));
                    }
                }
                (None, Target::External(path)) => {
                    found.push((at("*"), Target::External(path)));
                }
            }
        }
    }

    /// The members of a type or trait: its own (fields, variants, trait items) and its
    /// inherent impls' `pub` methods and constants.
    fn members(&self, m: usize, d: usize) -> Members {
        let mut members = self.modules[m].defs[d].members.clone();
        for (impl_module, self_ty, impl_members) in &self.impls {
            if self.resolve(*impl_module, self_ty, 0) == Target::Def(m, d) {
                members.extend(impl_members.iter().cloned());
            }
        }
        members
    }

    /// The listing: one line per public path, `path: kind`, sorted.
    fn listing(&self, crate_name: &str) -> Vec<String> {
        let paths = self.public_paths();
        let mut by_target: BTreeMap<Target, Vec<Vec<String>>> = BTreeMap::new();
        for (path, target) in paths {
            by_target.entry(target).or_default().push(path);
        }
        let show = |path: &[String]| {
            let mut all = vec![crate_name.to_string()];
            all.extend(path.iter().cloned());
            all.join("::")
        };
        let mut lines = BTreeSet::new();
        for (target, mut paths) in by_target {
            paths.sort();
            paths.dedup();
            let (home, kind, members): (Vec<String>, String, Vec<(String, &str)>) = match &target {
                Target::External(what) => {
                    for path in &paths {
                        lines.insert(format!("{}: re-export of {what}", show(path)));
                    }
                    continue;
                }
                Target::Module(mm) => {
                    let def_path = &self.modules[*mm].path;
                    (nearest(&paths, def_path), "mod".into(), vec![])
                }
                Target::Def(dm, dd) => {
                    let def_path = &self.modules[*dm].path;
                    let def = &self.modules[*dm].defs[*dd];
                    (
                        nearest(&paths, def_path),
                        def.kind.into(),
                        self.members(*dm, *dd),
                    )
                }
            };
            lines.insert(format!("{}: {kind}", show(&home)));
            for (member, member_kind) in members {
                lines.insert(format!("{}::{member}: {member_kind}", show(&home)));
            }
            for path in paths.iter().filter(|p| **p != home) {
                lines.insert(format!("{}: re-export of {}", show(path), show(&home)));
            }
        }
        lines.into_iter().collect()
    }
}

/// Of the paths that reach an item, the one nearest where it is written: the longest common
/// prefix with its module's path, then the shortest, then the first in order.
fn nearest(paths: &[Vec<String>], def_module: &[String]) -> Vec<String> {
    let common = |p: &Vec<String>| p.iter().zip(def_module).take_while(|(a, b)| a == b).count();
    paths
        .iter()
        .min_by(|a, b| {
            common(b)
                .cmp(&common(a))
                .then(a.len().cmp(&b.len()))
                .then(a.cmp(b))
        })
        .cloned()
        .expect("an item listed has a path")
}

fn parse(file: &Path) -> Vec<syn::Item> {
    let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .items
}

/// The public surface of the crate whose sources are under `src`, one line per public path.
fn public_api(src: &Path, crate_name: &str) -> Vec<String> {
    Crate::read(src).listing(crate_name)
}

/// The crate's surface, checked against its committed list: equal, or the test names every
/// line added and removed and how to accept them; `DEALGYM_BLESS=1` rewrites the list instead.
fn surface_is_the_committed_list(crate_dir: &str, crate_name: &str) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let list_file = root.join(crate_dir).join("public-api.txt");
    let current = public_api(&root.join(crate_dir).join("src"), crate_name);
    let mut text = current.join("\n");
    text.push('\n');
    if std::env::var_os("DEALGYM_BLESS").is_some() {
        fs::write(&list_file, &text).unwrap_or_else(|e| panic!("{}: {e}", list_file.display()));
        return;
    }
    let committed = fs::read_to_string(&list_file).unwrap_or_default();
    let committed: BTreeSet<&str> = committed.lines().filter(|l| !l.is_empty()).collect();
    let current: BTreeSet<&str> = current.iter().map(String::as_str).collect();
    let added: Vec<&str> = current.difference(&committed).copied().collect();
    let removed: Vec<&str> = committed.difference(&current).copied().collect();
    assert!(
        added.is_empty() && removed.is_empty(),
        "{crate_name}'s public surface is not {crate_dir}/public-api.txt ({} items now, {} \
         listed).\nNewly public:\n  {}\nNo longer public:\n  {}\nNarrow what no other crate \
         needs to pub(crate); if the change is meant, rewrite the list with \
         `DEALGYM_BLESS=1 cargo test --test integration public_api::` and commit it.",
        current.len(),
        committed.len(),
        added.join("\n  "),
        removed.join("\n  "),
    );
}

#[test]
fn the_core_public_surface_is_the_committed_list() {
    surface_is_the_committed_list("crates/core", "dealgym_core");
}

#[test]
fn the_runtime_public_surface_is_the_committed_list() {
    surface_is_the_committed_list("crates/dealgym", "dealgym");
}

/// The listing's own rules, on a crate written for the purpose: re-exports resolved (named,
/// renamed, globbed), restricted and test-only items left out, members listed under the path
/// nearest their definition.
#[test]
fn the_listing_counts_what_another_crate_can_name() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path();
    fs::create_dir_all(src.join("inner")).expect("a module folder");
    fs::write(
        src.join("lib.rs"),
        "pub mod inner;\nmod hidden;\npub use hidden::{Shown, shown as renamed};\n\
         pub use hidden::deep::*;\npub(crate) fn narrow() {}\n#[cfg(test)]\npub fn only_in_tests() {}\n",
    )
    .expect("lib.rs");
    fs::write(
        src.join("hidden.rs"),
        "pub mod deep { pub const GLOBBED: u8 = 1; pub(super) const NOT: u8 = 2; }\n\
         pub struct Shown { pub open: u8, closed: u8 }\n\
         impl Shown { pub fn new() -> Self { todo!() } pub(crate) fn inside(&self) {} }\n\
         pub fn shown() {}\npub fn unreached() {}\n",
    )
    .expect("hidden.rs");
    fs::write(
        src.join("inner/mod.rs"),
        "pub use crate::Shown;\npub enum Kind { A, B }\npub trait Rule { fn check(&self); }\n",
    )
    .expect("inner/mod.rs");
    assert_eq!(
        public_api(src, "k"),
        [
            "k::GLOBBED: const",
            "k::Shown: struct",
            "k::Shown::new: method",
            "k::Shown::open: field",
            "k::inner: mod",
            "k::inner::Kind: enum",
            "k::inner::Kind::A: variant",
            "k::inner::Kind::B: variant",
            "k::inner::Rule: trait",
            "k::inner::Rule::check: trait method",
            "k::inner::Shown: re-export of k::Shown",
            "k::renamed: fn",
        ]
    );
}
