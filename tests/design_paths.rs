//! Every path `docs/design.md` names in its recipes ("Adding a policy",
//! "Adding a store")
//! exists in the tree: a recipe that names a file moved or gone fails
//! here.

use std::path::Path;

/// The paths named in backticks in the section `heading` of design.md
/// (those holding a `/`, with `<name>` placeholders left out).
fn paths_in(design: &str, heading: &str) -> Vec<String> {
    let start = design
        .find(heading)
        .unwrap_or_else(|| panic!("design.md has no section {heading:?}"));
    let section = &design[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|piece| piece.contains('/') && !piece.contains('<') && !piece.contains(' '))
        .map(str::to_owned)
        .collect()
}

/// The paths `heading` names that are not in the tree.
fn missing_in(heading: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(root.join("docs/design.md")).expect("docs/design.md");
    let named = paths_in(&design, heading);
    assert!(named.len() >= 6, "too few paths found: {named:?}");
    named
        .into_iter()
        .filter(|path| !root.join(path.trim_end_matches('/')).exists())
        .collect()
}

#[test]
fn adding_a_store_names_files_that_exist() {
    let missing = missing_in("## Adding a store");
    assert!(
        missing.is_empty(),
        "design.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn adding_a_policy_names_files_that_exist() {
    let missing = missing_in("## Adding a policy");
    assert!(
        missing.is_empty(),
        "design.md names paths that do not exist: {missing:?}"
    );
}
