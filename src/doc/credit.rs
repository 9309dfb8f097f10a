//! Photo credits, "read also" labels and tag-list labels in many languages: a picture's credit line
//! ("Foto: dpa", "Фото: личный архив", "JIM WATSON/AFP/Getty Images", "… (Photo Lionel
//! Bonaventure. AFP)") and the label of a teaser box whose links are gone or follow it
//! ("Leggi anche", "Baca juga:", "Читайте также", "More:") are the page's furniture, not the
//! article's text. News pages in other languages carry them with no class that names them
//! (a `<p><small>`, a `<dt>`), so the caption and teaser class rules never see them.
//!
//! Each pattern reads only the text; the caller keeps the element short, free of images and
//! small against the article.

use super::text_regex::TextRegex;
use std::sync::OnceLock;

/// News agencies that are also picture sources: named by a photo credit and by a wire story.
const WIRE_AGENCIES: &str =
    r"afp|ap|reuters|epa|efe|dpa|ansa|anadolu|xinhua|tass|ria novosti|antara|ddp";

/// Picture libraries and agencies' photo services a credit names (with `WIRE_AGENCIES`).
const PICTURE_SOURCES: &str = r"ap photo|epa-efe|getty images?|shutterstock|istock(?:photo)?|picture[- ]alliance|imago|keystone|sipa|bloomberg";

/// News agencies a wire story names as its source (with `WIRE_AGENCIES`): national agencies
/// of the languages the sets hold (the Russian names written out, as Russian wire lines are).
const OTHER_NEWS_AGENCIES: &str = r"интерфакс|тасс|риа новости|apa|sda|kna|epd|dts|ats|belga|anp|pap|ctk|čtk|mti|kyodo|jiji|yonhap|bernama|pti|ians|ani|europa press|associated press|agence france-presse|upi";

/// Agency acronyms the German-language press writes in lower case; any other name of three
/// letters or fewer counts only in capitals ("AFP", "APA"), so that "Apa?", "Ani." or "ap"
/// on a line of their own are words, not sources.
const LOWER_CASE_AGENCIES: &[&str] = &["dpa", "epd", "ddp", "dts", "kna", "sda"];

/// Whether `text` (whitespace collapsed, trimmed) is only the name of a news agency or two:
/// "(dpa)", "AFP", "Reuters", "dpa/AFP" as a whole line, the source tag a wire story carries
/// under its text. A sentence that names an agency ("A spokesperson told Reuters …") is
/// longer than its name; the caller asks only of whole short blocks, never of a word inside
/// a paragraph.
pub(super) fn is_agency_line(text: &str) -> bool {
    static R: OnceLock<TextRegex> = OnceLock::new();
    let matched = R
        .get_or_init(|| {
            let news = format!("{WIRE_AGENCIES}|{OTHER_NEWS_AGENCIES}");
            TextRegex::new(&format!(
                r"(?i)^\W*(?:{news})(?:\s*[/,;]\s*(?:{news}))*\W*$"
            ))
            .expect("static regex")
        })
        .is_match(text);
    // A colon makes the name a label ("AP:" before a question in an interview).
    matched && !text.ends_with([':', '：']) && short_names_as_agencies_write_them(text)
}

/// Whether every word of three letters or fewer in `text` is written in capitals, or is one
/// of [`LOWER_CASE_AGENCIES`] in lower case.
fn short_names_as_agencies_write_them(text: &str) -> bool {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty() && w.chars().count() <= 3)
        .all(|w| {
            w.chars().all(char::is_uppercase)
                || (w.chars().all(char::is_lowercase) && LOWER_CASE_AGENCIES.contains(&w))
        })
}

/// Whether `text` (whitespace collapsed, trimmed) is a photo credit line: a credit label with
/// its colon ("Foto:", "Crédit photo :", "图片来源："), a caption closing on a parenthesised
/// credit ("… (credit: NASA/Jude Guidry)", "(Photo X. AFP)"), a photographer and agency joined
/// by slashes ("JIM WATSON/AFP/Getty Images"), or "Photo by …" / "Both photos via …" /
/// "Courtesy of …".
/// Prose that merely mentions a photo ("Das Foto zeigt …", "the photos were taken …") is not.
pub(super) fn is_photo_credit(text: &str) -> bool {
    let r = credit_regexes();
    r.leading.is_match(text)
        || r.image_label
            .find(text)
            .is_some_and(|m| names_a_source(&text[m.end()..]))
        || (text.contains('(') && r.closing.is_match(text))
        || ((text.contains('/') || text.contains('|'))
            && r.slashed.is_match(text)
            && slashed_parts_fit(text))
}

/// Whether `rest`, what follows "Image:" or "Picture:", names where a picture comes from
/// ("Getty Images", "© Reuters", "courtesy of NASA", "via Twitter"). These English words also
/// label what a text is about — a container image ("Image: nginx:1.25"), a disk image
/// ("Image: Ubuntu 22.04") — so, unlike "Photo:" or "Foto:", the label alone is not enough: the
/// source starts with a capital, a © or "courtesy/via/by", and holds no further colon and no
/// version number.
fn names_a_source(rest: &str) -> bool {
    let lower = rest.to_lowercase();
    let opens = rest.starts_with(|c: char| c.is_uppercase() || c == '©')
        || ["courtesy ", "via ", "by "]
            .iter()
            .any(|w| lower.starts_with(w));
    let version = rest
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit());
    // A source is a name, not a sentence: "Picture: A woman walks past a mural in Kyiv."
    // describes the picture.
    let name_like = rest.split_whitespace().count() <= 6 && !rest.trim_end().ends_with('.');
    opens && name_like && !rest.contains([':', '：']) && !version
}

/// The lengths `slashed` leaves out, for a trimmed `text` (as every caller passes it): the
/// name before the first slash (or bar) at most 60
/// characters, and each part after a later slash at most 40 once the spaces around it are
/// taken off. The pattern repeats its classes without bounds because bounded repetitions of
/// `\p{L}` compile to an automaton copied per repetition (a hundred copies of every letter
/// of every script: about 50 ms of every process that extracts a page); neither part can hold
/// a slash or a bar, so where each one begins and ends is fixed, and counting here decides
/// exactly what `{0,60}` and `{1,40}` did.
fn slashed_parts_fit(text: &str) -> bool {
    let Some(sep) = text.find(['/', '|']) else {
        return false;
    };
    text[..sep].chars().count() <= 60
        && text[sep + 1..]
            .split('/')
            .skip(1)
            .all(|part| part.trim_matches(char::is_whitespace).chars().count() <= 40)
}

/// The credit patterns in three parts, so that the common case stays cheap: `leading`, anchored
/// at the start, fails within a few characters on prose; the two others need a character most
/// prose lacks and are asked only when it is there. One unanchored alternation of all five made
/// the regex engine scan every short block of every page with a large Unicode automaton (about
/// an eighth of the extraction's CPU time on the scrapinghub pages went to it).
struct CreditRegexes {
    /// A credit label with its colon, "Photo by …", "Courtesy of …".
    leading: TextRegex,
    /// A caption that ends on its credit in parentheses (needs a '(').
    closing: TextRegex,
    /// NAME/AGENCY, alone on its line (needs a '/' or '|').
    slashed: TextRegex,
    /// "Image:", "Picture:", "Illustration:" with its colon and the spaces after it: a credit
    /// only when a source follows (`names_a_source`).
    image_label: regex::Regex,
}

fn credit_regexes() -> &'static CreditRegexes {
    static R: OnceLock<CreditRegexes> = OnceLock::new();
    R.get_or_init(|| {
        // The words that head a credit line, by language; a colon must follow.
        let labels = [
            r"photos?|credits?|photo ?credits?|crédits?(?: photos?)?",
            r"fotos?|bild(?:er)?|bildquelle|bildnachweis|fotonachweis|grafik",
            r"imagen(?:es)?|ilustración|fotografías?|fotografias?|crédito(?: fotográfico)?",
            r"fonte foto|sursa foto|kredit foto|sumber foto|burimi|fotografi",
            r"фото(?:графия)?|источник фото|фотография",
            r"الصورة|صورة|تصویر|عکس",
            r"图片来源|图片|摄影|圖片|写真|사진",
        ]
        .join("|");
        let agencies = format!("{WIRE_AGENCIES}|{PICTURE_SOURCES}");
        let label = format!(r"^\W*(?:{labels})\s*[:：]");
        // A caption that ends on its credit in parentheses: with a colon ("(credit: NASA)"),
        // or naming an agency or a slash after a space ("(Photo Lionel Bonaventure. AFP)"), not
        // "(credit cards only)", "(photo finish)" or "(Bild am Sonntag)".
        let words = r"photo|foto|фото|crédit|credit|crédito|image|imagen|bild|picture";
        let closing = format!(
            r"\((?:{words})(?:\s*:[^()]{{1,80}}|\s[^()]{{0,80}}?(?:\b(?:{agencies})\b|/)[^()]{{0,80}})\)\W*$"
        );
        // NAME/AGENCY[/AGENCY], alone on its line (lengths: `slashed_parts_fit`).
        let slashed = format!(
            r"^[\p{{L}}\p{{M}} .'’-]*(?:/|\|)\s*(?:{agencies})(?:\s*/\s*[\p{{L}}\p{{M}} .'’-]+)*$"
        );
        // "Photo by Jane Doe", "Both photos via Getty Images".
        let by = r"^\W*(?:\p{L}+\s+)?(?:photos?|images?|pictures?|fotos?)\s+(?:by|via|courtesy(?: of)?)\s+[^.!?]{1,60}$";
        // "Courtesy of Andrew Vaughan", "Courtesy: NASA" (not a heading "Courtesy matters").
        let courtesy = r"^\W*courtesy(?:\s+of|\s*:)\s+[^.!?]{1,60}$";
        let re = |pattern: &str| TextRegex::new(&format!("(?i){pattern}")).expect("static regex");
        CreditRegexes {
            leading: re(&format!("{label}|{by}|{courtesy}")),
            closing: re(&closing),
            slashed: re(&slashed),
            image_label: regex::Regex::new(
                r"(?i)^\W*(?:images?|pictures?|illustrations?)\s*[:：]\s*",
            )
            .expect("static regex"),
        }
    })
}

/// Whether `text` (whitespace collapsed, trimmed) opens with the label of a "read also" box
/// in one of many languages ("À lire aussi :", "Lesen Sie auch", "Leggi anche", "Baca juga",
/// "Читайте также", "یہ بھی پڑھیں"), or is the English "More:" label. The caller asks it only
/// of short or link-heavy blocks: "Lesen Sie auch, was die Kammer dazu sagt" in a long
/// paragraph of prose is not asked.
pub(super) fn is_read_also_label(text: &str) -> bool {
    static R: OnceLock<TextRegex> = OnceLock::new();
    R.get_or_init(|| {
        let labels = [
            // English, with a colon the teaser rule's word boundary did not allow ("See also",
            // an encyclopedia's section, is left alone)
            r"more\s*:|related\s*:",
            // French
            r"(?:à |a )?lire aussi|lire également|(?:à |a )?voir aussi|à lire également",
            // German
            r"lesen sie (?:auch|mehr)|auch interessant|siehe auch|mehr dazu",
            // Portuguese, Spanish
            r"leia (?:também|mais)|veja (?:também|mais)|saiba mais|lee también|lea también|leer más|ver también|te puede interesar|le puede interesar|también te puede interesar",
            // Italian
            r"leggi anche|leggi pure|vedi anche|potrebbe interessarti|ti potrebbe interessare",
            // Romanian, Albanian, Indonesian
            r"citește și|citeste si|vezi și|vezi si|lexo(?:ni)? edhe|baca juga|baca pula|lihat juga|simak juga",
            // Polish, Dutch
            r"czytaj (?:też|także|również)|przeczytaj (?:też|także)|zobacz (?:też|także)|lees ook|bekijk ook",
            // Russian, Ukrainian
            r"читайте (?:также|по теме|еще|ещё)|смотрите также|см\. также|читайте також",
            // Arabic, Urdu
            r"اقرأ أيض[اً]|اقرأ المزيد|اقرأ ايضا|یہ بھی پڑھیں|مزید پڑھیں",
            // Chinese, Japanese
            r"相关阅读|延伸阅读|推荐阅读|相關閱讀|延伸閱讀|あわせて読みたい|関連記事",
        ]
        .join("|");
        TextRegex::new(&format!(r"(?i)^\W*(?:{labels})(?:\W|$)")).expect("static regex")
    })
    .is_match(text)
}

/// Whether `text` (whitespace collapsed, trimmed) opens with the label of a tag or topic list
/// ("Tags:", "Filed under:", "Schlagwörter", "Etiquetas:", "Mots-clés :", "Теги:",
/// "Kata kunci:", "标签："). `linked` says the block is mostly link text. Labels that name
/// nothing but a tag list count either way; labels that also head an article's section or a
/// field of an info box ("Topics:", "Themen:", "Category: Fiction" in a book review's details)
/// count only with their colon and only over links — what makes such a line a tag list is that
/// its entries are links to other pages. The caller asks only of short or link-heavy blocks,
/// so "Tags are sold at the town hall." is never asked.
pub(super) fn is_tag_label(text: &str, linked: bool) -> bool {
    let r = tag_regexes();
    r.alone.is_match(text) || (linked && r.colon.is_match(text))
}

/// Whether the entries after a label are mostly link text, for [`is_tag_label`]'s `linked`:
/// `link` and `len` are the block's linked and whole text lengths in characters. The label
/// and its colon are never linked, so they are left out: "Category: UK" with "UK" linked is a
/// list of links, "Category: Fiction" with nothing linked is a field.
pub(super) fn links_after_label(text: &str, link: u32, len: u32) -> bool {
    let label = text
        .find([':', '：'])
        .map_or(0, |i| text[..i].chars().count() + 1);
    link > 0 && link.saturating_mul(2) >= len.saturating_sub(label as u32)
}

struct TagRegexes {
    /// Labels that name only a tag list, alone or with their colon.
    alone: TextRegex,
    /// Labels that also name a section or a field, with their colon.
    colon: TextRegex,
}

fn tag_regexes() -> &'static TagRegexes {
    static R: OnceLock<TagRegexes> = OnceLock::new();
    R.get_or_init(|| {
        // Labels that name nothing but a tag list: alone or with their colon.
        let alone = [
            r"tags|tagged|tagged with|filed under|schlagwörter|schlagworte|stichwörter|stichworte",
            r"mots-clés|mots clés|étiquettes|etiquetas|palavras-chave|parole chiave|tagi|słowa kluczowe",
            r"trefwoorden|теги|тэги|метки|ключевые слова|etichete|cuvinte cheie|etiketa|etiketat",
            r"fjalë kyçe|kata kunci|الوسوم|الكلمات المفتاحية|ٹیگز|标签|关键词|关键字|タグ|태그",
        ]
        .join("|");
        // Labels that also head an article's own section: only with their colon.
        let colon = r"tag|topics?|keywords|categories|category|themen|kategorien|thèmes|catégories|temas|categorías|categorias|tópicos|argomenti|categorie|темы|рубрики|рубрика|topik|kategori|tematy|onderwerpen|label";
        let re = |pattern: &str| TextRegex::new(pattern).expect("static regex");
        TagRegexes {
            alone: re(&format!(r"(?i)^\W*(?:{alone})\s*(?:[:：]|$)")),
            colon: re(&format!(r"(?i)^\W*(?:{colon})\s*[:：]")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn photo_credits_are_recognised_in_many_languages() {
        for line in [
            "Foto: University of Edinburgh; großes Foto oben: Norrie Russell",
            "Фото:",
            "Фото: личный архив Андрея Рудькова",
            "Photo: Getty Images, Instagram",
            "Crédit photo : Ludovic Marin / AFP",
            "Imagen: EFE",
            "图片来源：新华社",
            "The core stage after the installation of its four engines. (credit: NASA/Jude Guidry)",
            "Jean-Marc Ayrault, le 27 octobre 2012 à Toulouse (Photo Lionel Bonaventure. AFP)",
            "JIM WATSON/AFP/Getty Images",
            "Ludovic Marin / AFP",
            "Both photos via Getty Images",
            "Photo by Jane Doe",
            "Courtesy of Andrew Vaughan",
            "Courtesy: NASA/JPL",
            "Image: Getty Images",
            "Picture: © Reuters",
            "Image: courtesy of the artist",
            "Illustration: Jane Doe",
        ] {
            assert!(is_photo_credit(line), "{line}");
        }
    }

    #[test]
    fn slashed_credits_keep_their_length_limits() {
        let name = |n: usize| "J".repeat(n);
        assert!(is_photo_credit(&format!("{}/AFP", name(60))));
        assert!(!is_photo_credit(&format!("{}/AFP", name(61))));
        assert!(is_photo_credit(&format!(
            "Ludovic Marin / AFP / {}",
            name(40)
        )));
        assert!(!is_photo_credit(&format!(
            "Ludovic Marin / AFP / {}",
            name(41)
        )));
        // Spaces around a part go to the pattern's `\s*`, not to the part's 40.
        assert!(is_photo_credit(&format!(
            "Marin/AFP /   {}   / Getty Images",
            name(40)
        )));
        assert!(!is_photo_credit(&format!(
            "Marin/AFP / {} x / Getty Images",
            name(40)
        )));
        assert!(!is_photo_credit("Marin/AFP//Getty Images"));
        assert!(is_photo_credit("Marin | Reuters"));
        assert!(!is_photo_credit("Marin | Reuters | Getty Images"));
    }

    #[test]
    fn prose_about_pictures_is_not_a_credit() {
        for line in [
            "Das Foto zeigt den Bürgermeister bei der Eröffnung.",
            "console.log(photo.title);",
            "The photos were taken by a drone over the harbour.",
            "Photographers from AFP and Reuters were at the scene.",
            "Fotos und Videos sind im Anhang zu finden.",
            "A spokesperson told Reuters the deal was off.",
            "Courtesy matters",
            "Customers can pay in three instalments (credit cards only).",
            "El Gobierno amplía las ayudas a las familias (crédito fiscal incluido).",
            "The race was decided by a camera (photo finish).",
            "Das stand in der Zeitung (Bild am Sonntag).",
            "A map of the region (image of the map below).",
            "The report came via Reuters.",
            "Reuters",
            "Credit card debt rose again in March, the bank said.",
            "Courtesy of the mayor, the hall stays open late. It closes at ten.",
            // Text about a container or disk image, not a picture's source.
            "Image: nginx:1.25",
            "Image: Nginx:1.25-alpine",
            "Image: Ubuntu 22.04",
            "Images: postgres and redis",
            // A description of the picture, not its source.
            "Picture: A woman walks past a mural in Kyiv.",
            "Image: The base image your container starts from.",
            "",
        ] {
            assert!(!is_photo_credit(line), "{line}");
        }
    }

    #[test]
    fn agency_lines_are_only_an_agency() {
        for line in [
            "(dpa)",
            "AFP",
            "Reuters",
            "dpa/AFP",
            "(AFP/Reuters)",
            "AP",
            "Europa Press",
        ] {
            assert!(is_agency_line(line), "{line}");
        }
        for line in [
            "A spokesperson told Reuters the deal was off.",
            "(dpa) Berlin – Die Bundesregierung hat am Mittwoch beschlossen",
            "Reuters contributed to this report.",
            "Apart",
            "AFP 2026",
            // Words, not sources: short names count only as agencies write them.
            "Apa?",
            "Ani.",
            "ap",
            "Pap!",
            // A speaker's label in an interview.
            "AP:",
            "",
        ] {
            assert!(!is_agency_line(line), "{line}");
        }
        for line in ["APA", "(sda)", "ТАСС", "РИА Новости", "dpa/AFP"] {
            assert!(is_agency_line(line), "{line}");
        }
    }

    #[test]
    fn a_label_is_a_list_of_links_when_its_entries_are_linked() {
        // "Category: UK" with "UK" linked: 2 of the 3 characters after the label.
        assert!(links_after_label("Category: UK", 2, 12));
        assert!(links_after_label("Topics: Brexit, Trade", 12, 21));
        // Nothing linked: a field of an info box.
        assert!(!links_after_label("Category: Fiction", 0, 17));
        // One short link among long unlinked entries.
        assert!(!links_after_label(
            "Topics: Brexit, trade and the tariffs of 2026",
            6,
            45
        ));
        // No label: the whole text counts, as before.
        assert!(links_after_label("Bari, piste ciclabili", 21, 21));
    }

    #[test]
    fn read_also_labels_are_recognised_in_many_languages() {
        for line in [
            "Leggi anche",
            "More:",
            "À lire aussi : Notre récit du discours",
            "A lire aussi : Notre récit",
            "Lesen Sie auch: Der neue Haushalt",
            "Baca juga: Harga beras naik",
            "Читайте также: Новые правила",
            "Citește și: Guvernul a decis",
            "Lexo edhe: Qeveria",
            "Leia também",
            "Lee también: El Gobierno aprueba",
            "یہ بھی پڑھیں: حکومت",
            "相关阅读：",
        ] {
            assert!(is_read_also_label(line), "{line}");
        }
    }

    #[test]
    fn tag_list_labels_are_recognised_in_many_languages() {
        for line in [
            "Tags",
            "Tags: Dennis Morton, film, kusp film review",
            "Filed under: Khawarij |",
            "Topics: olympics-summer, swimming, australia",
            "Schlagwörter",
            "Etiquetas: Gobierno, Presupuestos",
            "Mots-clés : municipales",
            "Теги: выборы, бюджет",
            "Kata kunci: banjir, Jakarta",
            "标签：经济",
            "Tag: Bari, piste ciclabili",
        ] {
            assert!(is_tag_label(line, true), "{line}");
        }
        // Labels that name only a tag list need no links.
        for line in [
            "Tags",
            "Tags: film",
            "Schlagwörter",
            "Filed under: Khawarij |",
        ] {
            assert!(is_tag_label(line, false), "{line}");
        }
        for line in [
            "Tags are sold at the town hall.",
            "Topics",
            "Themen der Sitzung waren der Haushalt und die Schulen.",
            "Temas",
            "Tagliandi: 2 euro l'ora.",
            "",
        ] {
            assert!(!is_tag_label(line, true), "{line}");
        }
        // A field of a review's or a product's details, not links: "Category: Fiction".
        for line in [
            "Category: Fiction",
            "Categories: Crime, Thriller",
            "Topics: housing and rents",
            "Themen: Wohnen, Mieten",
            "Kategorien: Roman",
            "Tag: 3",
        ] {
            assert!(!is_tag_label(line, false), "{line}");
        }
    }

    #[test]
    fn sentences_that_start_alike_are_not_labels() {
        for line in [
            "Moreover, the council agreed.",
            "More than 300 people attended the meeting.",
            "Lesenswert ist auch der Bericht des Rechnungshofs.",
            "Leggiamo anche i dati del 2025.",
            "Bacalah dengan teliti.",
            "",
        ] {
            assert!(!is_read_also_label(line), "{line}");
        }
    }
}
