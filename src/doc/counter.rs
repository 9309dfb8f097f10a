//! Picture gallery counters ("1 / 12", "Image 3 of 5", "Bild 3 von 10"): the position a
//! slide show prints beside each picture, which the `counter` rule of `main_content` drops
//! once the gallery has been judged. Pure text tests; where a counter stands (alone in its
//! parent, in a gallery) is the caller's to decide.

use std::sync::OnceLock;

/// The words a gallery counter counts in ("Image 3 of 5", "Bild 3 von 10", "Foto 2 de 8").
const COUNTED_PICTURES: &str = r"images?|photos?|pictures?|slides?|bild|foto|fotos|imagen|imagem|immagine|фото|слайд|zdjęcie|gambar";

/// Whether `text` (whitespace collapsed, trimmed) is a picture gallery's counter: "1 / 12",
/// "Image 3 of 5", "Bild 3 von 10", "Foto 2 de 8" — a position from 1 up to the total. A bare
/// pair needs spaces around its slash: "9/11" or "12/26" alone is a date as
/// often as a counter.
pub(super) fn is_gallery_counter(text: &str) -> bool {
    static R: OnceLock<regex::Regex> = OnceLock::new();
    let r = R.get_or_init(|| {
        let words = COUNTED_PICTURES;
        regex::Regex::new(&format!(
            r"(?i)^\W*(?:({words})\s+)?(\d{{1,3}})(\s*/\s*|\s+(?:of|von|de|di|sur|van|z|из|dari)\s+)(\d{{1,3}})\W*$"
        ))
        .expect("static regex")
    });
    let Some(c) = r.captures(text) else {
        return false;
    };
    let number = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let (Some(at), Some(of)) = (number(2), number(4)) else {
        return false;
    };
    let worded = c.get(1).is_some() || c[3].trim() != "/";
    let spaced = c[3].starts_with(char::is_whitespace) && c[3].ends_with(char::is_whitespace);
    (1..=of).contains(&at) && (worded || spaced)
}

/// Whether a gallery counter ([`is_gallery_counter`]) names what it counts ("Image 3 of 5",
/// "Bild 3 von 10"): a bare "3 of 5" or "8 / 10" is as often a score or a share, so the caller
/// asks for a gallery around it.
pub(super) fn counter_names_a_picture(text: &str) -> bool {
    static R: OnceLock<regex::Regex> = OnceLock::new();
    R.get_or_init(|| {
        regex::Regex::new(&format!(r"(?i)^\W*(?:{COUNTED_PICTURES})\s+\d")).expect("static regex")
    })
    .is_match(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_names_a_picture_or_needs_a_gallery() {
        for line in ["Image 3 of 5", "Bild 3 von 10", "Foto 2 di 8", "photos 1/4"] {
            assert!(counter_names_a_picture(line), "{line}");
        }
        for line in ["3 of 5", "1 / 12", "8 / 10", "Lotto 1 di 3"] {
            assert!(!counter_names_a_picture(line), "{line}");
        }
    }

    #[test]
    fn gallery_counters_are_a_position_and_a_total() {
        for line in [
            "1 / 12",
            "Image 1 of 5",
            "Bild 3 von 10",
            "Foto 2 de 8",
            "Photo 3/10",
            "12 / 12",
            "Slide 4 of 20",
            "1 / 1",
        ] {
            assert!(is_gallery_counter(line), "{line}");
        }
        for line in [
            "9/11",
            "12/26",
            "01/19",
            "13 / 12",
            "0 / 12",
            "Image 1 of 5 shows the harbour at dawn.",
            "Chapter 1 of 5",
            "3 of the 5",
            "",
        ] {
            assert!(!is_gallery_counter(line), "{line}");
        }
    }
}
