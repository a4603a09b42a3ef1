//! The config loader: arbitrary bytes as `covo.toml` and as a board file. Both loaders must
//! return an error naming the file, never panic. UTF-8 text goes through the parsers; anything else
//! through the file loaders (which must refuse it, naming the bad byte).
#![no_main]

use covo::config::Config;
use covo_board::board::BoardDef;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.toml");
    match std::str::from_utf8(data) {
        Ok(text) => {
            if let Ok(c) = Config::parse(text, path) {
                let _ = c.home_dir();
            }
            let _ = BoardDef::parse(text, path);
        }
        Err(_) => {
            // The file loaders' own error for bytes that are not UTF-8 (line, column, byte).
            // On tmpfs when there is one: a disk write per input would be most of the time.
            let dir = Some(std::path::PathBuf::from("/dev/shm"))
                .filter(|d| d.is_dir())
                .unwrap_or_else(std::env::temp_dir);
            let file = dir.join(format!("covo-fuzz-{}.toml", std::process::id()));
            if std::fs::write(&file, data).is_ok() {
                assert!(Config::from_file(&file).is_err());
                assert!(BoardDef::load(&file).is_err());
            }
        }
    }
});
