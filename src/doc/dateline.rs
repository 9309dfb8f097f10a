//! Date, update and source lines in many languages ("Aktualisiert am 3. März 2026",
//! "Опубликовано: 12.03.2026", "آخر تحديث: 12 مارس", "发布时间：2026-03-12", "来源：新华网"):
//! the article's furniture, not its text (`bylinetext`).
//!
//! A label alone is not enough: "Veröffentlicht wurde die Studie 2019 in Nature" and
//! "نشر في الصحيفة مقال…" are prose. The label must be followed at once by a date — a digit,
//! after at most a preposition ("am", "le", "el", "в", "في"…), a weekday with its comma and a
//! month ("Publié le mardi 3 mars", "Updated on Tuesday, March 3") — or by "by/von/por…"
//! and a name. A few labels that only head such lines (Chinese source and editor credits)
//! need just their colon. The caller keeps the line short; this module only reads its text.

use super::text_regex::TextRegex;
use std::sync::OnceLock;

/// Whether `text` (whitespace collapsed, trimmed) starts like a date, update or source line.
pub(super) fn is_dateline(text: &str) -> bool {
    static R: OnceLock<TextRegex> = OnceLock::new();
    R.get_or_init(|| {
        // Labels, by language, each followed by a date (or an author) in `FOLLOW`.
        let labels = [
            // English
            r"updated|published|posted|first published|last (?:updated|modified|reviewed)",
            // German (`stand` only with its colon: "Stand der Technik" is prose)
            r"aktualisiert|veröffentlicht|erschienen|erstellt|geändert|zuletzt (?:aktualisiert|geändert|bearbeitet)|letzte (?:aktualisierung|änderung)|stand\s*:",
            // French
            r"mis[e]? à jour|publié[e]?|modifié[e]?|paru[e]?|dernière mise à jour|date de publication",
            // Spanish, Portuguese
            r"actualizad[oa]|atualizad[oa]|publicad[oa]|última (?:actualización|atualização|modificación)|fecha de publicación|data de publicação",
            // Italian
            r"aggiornat[oa]|pubblicat[oa]|ultimo aggiornamento|ultima modifica|data di pubblicazione",
            // Polish
            r"aktualizacja|zaktualizowano|opublikowano|data (?:publikacji|dodania|aktualizacji)|ostatnia aktualizacja",
            // Dutch
            r"bijgewerkt|gepubliceerd|geplaatst|laatst bijgewerkt",
            // Russian
            r"обновлено|опубликовано|изменено|размещено|дата публикации|последнее обновление",
            // Arabic ("last update", "publication date", "published on/in", "was published")
            r"آخر تحديث|آخر تعديل|تاريخ النشر|تاريخ التحديث|نشر في|نُشر في|نشر بتاريخ|تم النشر|تم التحديث",
            // Chinese (published/updated time or date)
            r"发布时间|更新时间|发布日期|更新日期|发表时间|发布于|更新于|發佈時間|發布時間|更新時間",
        ]
        .join("|");
        // Punctuation, then at most a preposition and one word, then a digit; or an author.
        // A preposition or word starts after a space or the punctuation, never glued to the label
        // ("Erstellte 3D-Modelle", "Parution 2026" are prose).
        let follow = r"(?:\s*[:：,|–—-])?(?:\s+(?:am|on|at|le|du|el|em|il|op|um|à|a las|dnia|o|в|от|في|بتاريخ))?(?:\s*[:：,|–—-])?(?:\s+(?:\p{L}+\.?,\s+)?(?:\p{L}+\.?\s+)?)?\s*\d|\s+(?:by|von|por|par|przez|da|di|door)\s+(?-i:\p{Lu})";
        // Chinese credits that only head such lines, possibly after the date.
        let credits = r"(?:\d[\d\s年月日:./-]*)?(?:来源|稿源|来自|责任编辑|责编|编辑|作者|記者|记者)\s*[:：]";
        TextRegex::new(&format!(r"(?i)^\W*(?:(?:{labels})(?:{follow})|{credits})"))
            .expect("static regex")
    })
    .is_match(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_and_source_lines_are_recognised_in_many_languages() {
        for line in [
            "Updated 3:45 PM ET, March 3, 2026",
            "Last updated on Tuesday, March 3, 2026",
            "Posted on Nov. 19, 2019 by Jane Doe",
            "Published: 12 March 2026",
            "Aktualisiert am 03.03.2026, 14:10 Uhr",
            "Veröffentlicht am Dienstag, 3. März 2026",
            "Stand: 12.03.2026",
            "Stand: März 2026",
            "Zuletzt aktualisiert: 4. Mai 2026",
            "Mis à jour le 3 mars 2026 à 10h30",
            "Publié le mardi 3 mars 2026",
            "Actualizado: 03/05/2026 - 10:00",
            "Publicado el 3 de mayo de 2026",
            "Atualizado em 12/03/2026 às 10h",
            "Aggiornato il 12 marzo 2026",
            "Pubblicato il 3 marzo 2026 alle 10:00",
            "Aktualizacja: 12.03.2026 10:15",
            "Opublikowano: 12 marca 2026",
            "Data publikacji: 12.03.2026",
            "Bijgewerkt op 12 maart 2026",
            "Обновлено 12.03.2026",
            "Опубликовано: 12 марта 2026, 10:15",
            "آخر تحديث: 12 مارس 2026",
            "نشر في: 12/03/2026 - 10:15",
            "تاريخ النشر: ١٢ مارس ٢٠٢٦",
            "发布时间：2026-03-12 10:15",
            "更新时间:2026年3月12日",
            "来源：新华网",
            "2026-03-12 10:15 来源：人民网",
            "责任编辑：王明",
            "Veröffentlicht von Anna Schmidt",
            "Publicado por Juan Pérez",
        ] {
            assert!(is_dateline(line), "{line}");
        }
    }

    #[test]
    fn prose_that_starts_with_a_label_is_not_a_date_line() {
        for line in [
            "Veröffentlicht wurde die Studie 2019 in der Fachzeitschrift Nature.",
            "Aktualisiert werden die Daten jedes Jahr im Frühjahr.",
            "Stand der Technik ist das noch lange nicht.",
            "Publié chez Gallimard, le roman a été traduit en 30 langues.",
            "Publicado originalmente en inglés, el libro vendió millones.",
            "Opublikowano także listę 25 gmin, które otrzymają wsparcie.",
            "Опубликовано также письмо 12 депутатов.",
            "Publicado por cierto en 2019 por otra editorial.",
            "Publicado originalmente en 2019 por otra editorial.",
            "Updated guidance was issued on Monday.",
            "نشر في الصحيفة مقال عن 12 قرية.",
            "时间：2026年5月1日 地点：市民中心",
            "Der Bericht wurde am 12.03.2026 veröffentlicht.",
            "Die Gemeinde hat ihren Haushalt 2026 veröffentlicht.",
            // A label glued to the rest of a word.
            "Erstellte 3D-Modelle zeigen den Bau.",
            "Parution 2026 chez Gallimard",
            "",
        ] {
            assert!(!is_dateline(line), "{line}");
        }
    }
}
