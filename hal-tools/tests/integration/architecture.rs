//! Architecture invariant: no concrete HAL type or crate is named outside `src/backend/`.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn concrete_hals_are_named_only_in_the_backend() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let backend = src.join("backend");
    let named = [
        "linux_embedded_hal",
        "gpiocdev",
        "serialport",
        "i2cdev",
        "spidev",
        "rppal",
        "I2cdev",
        "SpidevDevice",
        "TTYPort",
    ];
    for f in files.iter().filter(|f| !f.starts_with(&backend)) {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for name in named {
                assert!(
                    !code.contains(name),
                    "{}:{}: names {name} outside src/backend/",
                    f.display(),
                    n + 1
                );
            }
        }
    }
}
