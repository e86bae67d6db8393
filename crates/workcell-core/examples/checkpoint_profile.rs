//! Where a checkpoint's time goes: a tree of 20,000 files in 200 directories, a cold
//! checkpoint, then incremental ones with 10 files changed (as bench/checkpoint.mjs).
//! `cargo run -p workcell-core --release --example checkpoint_profile [DIR]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use workcell_core::checkpoint::{snapshot, Checkpoints, Options};
use workcell_core::{Cancel, Workspace};

fn main() {
    let base = std::env::args().nth(1).map(std::path::PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("workcell-ckpt-profile-{}", std::process::id()));
    let root = dir.join("root");
    let line = "x".repeat(63) + "\n";
    for d in 0..200 {
        std::fs::create_dir_all(root.join(format!("d{d}"))).unwrap();
    }
    for i in 0..20_000 {
        std::fs::write(root.join(format!("d{}/f{i}.txt", i % 200)), format!("file {i}\n{}", line.repeat(16))).unwrap();
    }
    let ws = Arc::new(Workspace::open(&root).unwrap());
    let cp = Checkpoints::open(ws, Options { store_dir: Some(dir.join("store")), ..Options::default() }).unwrap();
    let c = Cancel::new();
    let run = |what: &str| {
        let t = Instant::now();
        let (_, s) = snapshot::create_measured(&cp, None, &c).unwrap();
        println!("{what}: {:?} read {} cached {} phases {:?}", t.elapsed(), s.read, s.cached, s.phases);
    };
    run("cold");
    std::thread::sleep(Duration::from_millis(2500));
    run("settle");
    for n in 0..3 {
        for k in 0..10 {
            let i = (n * 997 + k * 131) % 20_000;
            std::fs::write(root.join(format!("d{}/f{i}.txt", i % 200)), format!("changed {n} {k}\n{}", line.repeat(16))).unwrap();
        }
        std::thread::sleep(Duration::from_millis(2100));
        run("incremental");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
