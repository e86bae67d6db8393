//! Writes the files generated from the tools' contract (`workcell_core::contract`):
//! `cargo run -p workcell-core --bin contract` from anywhere in the repository (npm run
//! generate). With `--check`, writes nothing and exits 1 when a committed file differs.

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let check = std::env::args().any(|a| a == "--check");
    let mut stale = false;
    for (path, text) in workcell_core::contract::generate() {
        let file = root.join(path);
        if std::fs::read_to_string(&file).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if check {
            eprintln!("{path} differs from what the contract generates");
            stale = true;
        } else {
            std::fs::create_dir_all(file.parent().expect("a parent")).expect("create the directory");
            std::fs::write(&file, text).expect("write the file");
            println!("wrote {path}");
        }
    }
    if stale {
        eprintln!("run `npm run generate` and commit the files");
        std::process::exit(1);
    }
}
