//! `multipart/form-data` bodies, for the few uploads covo makes (a photo to Telegram, audio to a
//! transcription API from the peer). Built here rather than with reqwest's `multipart` feature,
//! which links `mime_guess`'s tables for these one-file forms.

/// A `multipart/form-data` body (RFC 7578) of text fields and one file part: `(field name,
/// file name, content type, bytes)`. Returns the boundary and the body. The boundary is random
/// and checked against the file's bytes; the field and file names are the caller's own.
pub fn form(fields: &[(&str, String)], file: (&str, &str, &str, &[u8])) -> (String, Vec<u8>) {
    let boundary = loop {
        let b = format!("covo-{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let needle = b.as_bytes();
        if !file.3.windows(needle.len()).any(|w| w == needle)
            && !fields.iter().any(|(_, v)| v.contains(&b))
        {
            break b;
        }
    };
    let mut body = Vec::with_capacity(file.3.len() + 512);
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    let (name, filename, mime, bytes) = file;
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {mime}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (boundary, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies_are_well_formed() {
        let (b, body) = form(
            &[("chat_id", "42".into())],
            ("photo", "plot.png", "image/png", b"\x89PNG"),
        );
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n"
        )));
        assert!(text
            .contains("name=\"photo\"; filename=\"plot.png\"\r\nContent-Type: image/png\r\n\r\n"));
        assert!(text.ends_with(&format!("\r\n--{b}--\r\n")));
    }

    #[test]
    fn the_boundary_is_in_neither_the_file_nor_a_field() {
        for _ in 0..50 {
            let (b, _) = form(
                &[("a", "covo-".into())],
                ("f", "x.bin", "application/octet-stream", b"covo-covo-"),
            );
            assert!(b.starts_with("covo-") && b.len() > 20, "{b}");
        }
    }
}
