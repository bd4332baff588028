//! Builds the parser from `grammar/` and embeds the `stdlib/` sources into the binary.

use std::path::{Path, PathBuf};

fn main() {
    // Without this, cargo would rerun the build script only when `stdlib` changes.
    println!("cargo:rerun-if-changed=grammar");
    lalrpop::Configuration::new()
        .set_in_dir("grammar")
        .process()
        .expect("grammar/modelica.lalrpop must build");
    embed_stdlib();
}

fn embed_stdlib() {
    println!("cargo:rerun-if-changed=stdlib");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib");
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut out = String::from("&[\n");
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .expect("below stdlib/")
            .to_string_lossy()
            .replace('\\', "/");
        out.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            file.display().to_string()
        ));
    }
    out.push(']');
    let dest = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(dest.join("stdlib_files.rs"), out).expect("OUT_DIR is writable");
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "mo") {
            files.push(path);
        }
    }
}
