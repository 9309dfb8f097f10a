//! CID → Unicode for Adobe's four CJK character collections (Japan1, GB1, CNS1, Korea1).
//!
//! A composite font of one of these collections shown through Identity-H with no ToUnicode
//! (dvipdfmx writes them for pLaTeX documents, with CFF fonts that carry no cmap) tells its
//! glyphs only by CID; poppler reads them with poppler-data's cidToUnicode files, and issue 15
//! found such pages empty here. The tables (`cid/Adobe-*.bin`, 78 KB in all) are made by
//! scripts/pdf-cid-tables.py from Adobe's cid2code.txt (BSD 3-clause): per CID the first code
//! point of the collection's UTF-32 CMap, delta + zigzag varint coded, zlib-compressed. Each is
//! inflated once, on first use (≤ 122 KB in memory).

use std::io::Read;
use std::sync::OnceLock;

/// The collections we carry a table for, by their `/CIDSystemInfo /Ordering`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collection {
    Japan1,
    Gb1,
    Cns1,
    Korea1,
}

impl Collection {
    /// `/Registry (Adobe) /Ordering (Japan1)` → Japan1; any other ordering → None.
    pub fn from_ordering(ordering: &[u8]) -> Option<Collection> {
        match ordering {
            b"Japan1" | b"Japan2" => Some(Collection::Japan1),
            b"GB1" => Some(Collection::Gb1),
            b"CNS1" => Some(Collection::Cns1),
            b"Korea1" => Some(Collection::Korea1),
            _ => None,
        }
    }

    fn data(self) -> (&'static [u8], &'static OnceLock<Vec<u32>>) {
        static JAPAN1: OnceLock<Vec<u32>> = OnceLock::new();
        static GB1: OnceLock<Vec<u32>> = OnceLock::new();
        static CNS1: OnceLock<Vec<u32>> = OnceLock::new();
        static KOREA1: OnceLock<Vec<u32>> = OnceLock::new();
        match self {
            Collection::Japan1 => (include_bytes!("cid/Adobe-Japan1.bin"), &JAPAN1),
            Collection::Gb1 => (include_bytes!("cid/Adobe-GB1.bin"), &GB1),
            Collection::Cns1 => (include_bytes!("cid/Adobe-CNS1.bin"), &CNS1),
            Collection::Korea1 => (include_bytes!("cid/Adobe-Korea1.bin"), &KOREA1),
        }
    }

    /// The character of a CID, None where the collection gives it none (or past its end).
    pub fn text(self, cid: u32) -> Option<char> {
        let (bytes, cell) = self.data();
        let table = cell.get_or_init(|| decode(bytes));
        table
            .get(cid as usize)
            .copied()
            .filter(|&c| c != 0)
            .and_then(char::from_u32)
    }
}

/// Inflates and undoes the delta coding; a damaged table gives what it could read (the data is
/// ours, built in, but a decoder still has no business panicking).
fn decode(bytes: &[u8]) -> Vec<u32> {
    let mut raw = Vec::new();
    let _ = flate2::read::ZlibDecoder::new(bytes)
        .take(1 << 20)
        .read_to_end(&mut raw);
    let mut out = Vec::with_capacity(32_768);
    let (mut prev, mut acc, mut shift) = (0i64, 0u64, 0u32);
    for b in raw {
        acc |= ((b & 0x7F) as u64) << shift;
        if b & 0x80 != 0 && shift < 56 {
            shift += 7;
            continue;
        }
        let delta = (acc >> 1) as i64 ^ -((acc & 1) as i64);
        prev += delta;
        out.push(u32::try_from(prev).unwrap_or(0));
        (acc, shift) = (0, 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Collection;

    #[test]
    fn each_collection_reads_its_known_characters() {
        // Values read off Adobe's cid2code.txt files.
        assert_eq!(Collection::Japan1.text(34), Some('A'));
        assert_eq!(Collection::Japan1.text(843), Some('あ'));
        assert_eq!(Collection::Japan1.text(1125), Some('亜'));
        assert_eq!(Collection::Gb1.text(34), Some('A'));
        assert_eq!(Collection::Gb1.text(1086), Some('\u{95ED}'));
        assert_eq!(Collection::Cns1.text(34), Some('A'));
        assert_eq!(Collection::Cns1.text(843), Some('\u{672B}'));
        assert_eq!(Collection::Korea1.text(34), Some('A'));
        assert_eq!(Collection::Korea1.text(1086), Some('가'));
        assert_eq!(Collection::Japan1.text(0), None);
        assert_eq!(Collection::Japan1.text(1_000_000), None);
    }
}
