//! Images for `read_file`: the formats recognized by their first bytes (never by the name) and
//! the base64 text they are returned as.

/// Largest image `read_file` returns, in bytes (5 MiB: the size the providers accept per image).
pub const MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// How many leading bytes [`image_type`] needs to decide.
pub const SNIFF_BYTES: usize = 12;

/// The MIME type of an image whose content starts with `head`: PNG, JPEG, GIF or WebP, by
/// their signatures; `None` for anything else.
pub fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 (RFC 4648 §4, with `=` padding).
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let sextets = [(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63];
        for (i, s) in sextets.iter().enumerate() {
            // A chunk of k bytes gives k + 1 symbols; the rest is padding.
            out.push(if i <= chunk.len() { ALPHABET[*s as usize] as char } else { '=' });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), want);
        }
        assert_eq!(base64(&[0xFB, 0xFF, 0xBF]), "+/+/");
    }

    #[test]
    fn image_type_by_signature_only() {
        assert_eq!(image_type(b"\x89PNG\r\n\x1a\n\0\0\0\x0d"), Some("image/png"));
        assert_eq!(image_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a\x01\x00"), Some("image/gif"));
        assert_eq!(image_type(b"GIF87a"), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\x24\0\0\0WEBPVP8 "), Some("image/webp"));
        // Near misses stay text (or binary) files.
        assert_eq!(image_type(b"\x89PNG\r\n"), None);
        assert_eq!(image_type(b"RIFF\x24\0\0\0WAVEfmt "), None);
        assert_eq!(image_type(b"GIF88a"), None);
        assert_eq!(image_type(b"png file"), None);
        assert_eq!(image_type(b""), None);
    }
}
