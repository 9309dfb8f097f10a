#!/usr/bin/env python3
"""Generates /api/pdf's test and bench corpus: PDFs whose true text is known.

    pip install fpdf2==2.8.9    # once (pure Python; fonts from Debian fonts-dejavu-core)
    python3 scripts/pdf-corpus.py fixtures/pdf     # from the repository root

For every <name>.pdf with text, <name>.txt holds the text as written (the reference for word
recall/precision in `cargo bench --bench pdf`). Files without a .txt are the refusal cases
(encrypted, image-only, not a PDF, damaged). The demo twin's sample goes to
static/paycall-sample.pdf. Output is deterministic (fixed seed and dates).
"""
import io
import os
import random
import sys
import zlib
from datetime import datetime, timezone

from fpdf import FPDF

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
OUT = sys.argv[1] if len(sys.argv) > 1 else "fixtures/pdf"
CORPUS = os.path.join(OUT, "corpus")
BAD = os.path.join(OUT, "refused")
os.makedirs(CORPUS, exist_ok=True)
os.makedirs(BAD, exist_ok=True)
rng = random.Random(20261123)
DATE = datetime(2026, 11, 23, 9, 30, 0, tzinfo=timezone.utc)

WORDS = """harbour village morning water boat net fisher rope tide gull stone quiet river bridge
market bread baker window lamp winter summer garden orchard apple pear letter station train
platform ticket journey mountain valley forest path lantern evening candle kitchen table chair
story teacher student lesson number measure balance weight silver copper engine signal
copper clock tower bell square street corner shop cloth thread needle button paper ink pencil
library shelf volume chapter page margin column figure table result method analysis sample
reading writing memory season weather cloud storm thunder rain meadow field harvest grain
mill wheel cart horse stable farmer shepherd flock hill cliff shore wave sand shell lighthouse
keeper compass map island voyage captain sailor anchor harbourmaster customs cargo crate barrel
""".split()
AFFIX = ["office", "official", "efficient", "affluent", "fluffy", "waffle", "offer", "field",
         "flower", "fifty", "suffix", "baffle", "shuffle", "difficult", "traffic", "affirm"]


def sentence(n=None, vocab=WORDS):
    n = n or rng.randint(6, 14)
    ws = [rng.choice(vocab) for _ in range(n)]
    ws[0] = ws[0].capitalize()
    return " ".join(ws) + "."


def paragraph(k=None, vocab=WORDS):
    return " ".join(sentence(vocab=vocab) for _ in range(k or rng.randint(3, 6)))


def mc(pdf, h, text, **kw):
    pdf.multi_cell(0, h, text, new_x="LMARGIN", new_y="NEXT", **kw)


def new_pdf(title):
    pdf = FPDF(format="A4", unit="pt")
    pdf.set_creation_date(DATE)
    pdf.set_title(title)
    pdf.set_author("Paycall Test Corpus")
    pdf.set_subject("Generated PDF with known text")
    pdf.set_creator("scripts/pdf-corpus.py")
    pdf.set_producer("fpdf2")
    pdf.set_compression(True)
    for style, f in [("", "DejaVuSans.ttf"), ("B", "DejaVuSans-Bold.ttf")]:
        pdf.add_font("DejaVu", style, os.path.join(FONT_DIR, f))
    pdf.add_font("Serif", "", os.path.join(FONT_DIR, "DejaVuSerif.ttf"))
    return pdf


def save(pdf, name, text=None, where=CORPUS):
    pdf.output(os.path.join(where, name + ".pdf"))
    if text is not None:
        with open(os.path.join(where, name + ".txt"), "w", encoding="utf-8") as f:
            f.write(text.strip() + "\n")


# 1. Multi-page prose, embedded font with ToUnicode.
def multipage():
    pdf = new_pdf("Multi-page prose")
    text = []
    for p in range(6):
        pdf.add_page()
        pdf.set_font("DejaVu", "B", 16)
        head = f"Chapter {p + 1}: the {rng.choice(WORDS)} and the {rng.choice(WORDS)}"
        mc(pdf, 22, head)
        text.append(head)
        pdf.set_font("DejaVu", "", 11)
        for _ in range(5):
            para = paragraph()
            mc(pdf, 15, para, align="J")
            pdf.ln(6)
            text.append(para)
    save(pdf, "multipage", "\n".join(text))


# 2. Two columns under a full-width title, written row by row (left line, right line, ...)
#    so that content order interleaves the columns.
def wrap(pdf, text, width):
    lines, cur = [], ""
    for w in text.split():
        t = (cur + " " + w).strip()
        if pdf.get_string_width(t) > width and cur:
            lines.append(cur)
            cur = w
        else:
            cur = t
    if cur:
        lines.append(cur)
    return lines


def two_column(name, font, pages=2, gutter=25):
    pdf = new_pdf("Two-column article")
    text = []
    for p in range(pages):
        pdf.add_page()
        pdf.set_font(font, "B" if font == "DejaVu" else "", 18)
        title = f"A study of the {rng.choice(WORDS)} {rng.choice(WORDS)} part {p + 1}"
        pdf.text(60, 70, title)
        text.append(title)
        pdf.set_font(font, "", 10)
        col_w = 225
        left = [paragraph(4) for _ in range(3)]
        right = [paragraph(4) for _ in range(3)]
        ll = [ln for para in left for ln in wrap(pdf, para, col_w) + [""]]
        rl = [ln for para in right for ln in wrap(pdf, para, col_w) + [""]]
        ll = ll[:52]
        rl = rl[:52]
        y = 110
        for i in range(max(len(ll), len(rl))):
            if i < len(ll) and ll[i]:
                pdf.text(60, y, ll[i])
            if i < len(rl) and rl[i]:
                pdf.text(60 + col_w + gutter, y, rl[i])
            y += 13
        text.append("\n".join(l for l in ll if l))
        text.append("\n".join(l for l in rl if l))
    save(pdf, name, "\n".join(text))


# 3. Non-Latin scripts (Greek, Cyrillic, Armenian, Georgian), embedded subsets + ToUnicode.
GREEK = """θάλασσα λιμάνι πρωί νερό βάρκα δίχτυ ψαράς σχοινί παλίρροια πέτρα ήσυχο ποτάμι γέφυρα
αγορά ψωμί φούρναρης παράθυρο λάμπα χειμώνας καλοκαίρι κήπος γράμμα σταθμός ταξίδι βουνό""".split()
CYRILLIC = """гавань деревня утро вода лодка сеть рыбак верёвка прилив камень тихий река мост рынок
хлеб пекарь окно лампа зима лето сад письмо станция поезд путешествие гора долина лес""".split()
ARMENIAN = """նավահանգիստ գյուղ առավոտ ջուր նավակ ցանց ձկնորս պարան քար հանգիստ գետ կամուրջ""".split()
GEORGIAN = """ნავსადგური სოფელი დილა წყალი ნავი ბადე მეთევზე თოკი ქვა მშვიდი მდინარე ხიდი""".split()


def non_latin():
    pdf = new_pdf("Ελληνικά и русский")
    pdf.set_author("Σοφία Παπαδοπούλου")
    text = []
    for vocab in [GREEK, CYRILLIC, ARMENIAN, GEORGIAN]:
        pdf.add_page()
        pdf.set_font("DejaVu", "", 12)
        for _ in range(5):
            para = paragraph(vocab=vocab)
            mc(pdf, 17, para)
            pdf.ln(5)
            text.append(para)
    save(pdf, "nonlatin", "\n".join(text))


# 4. Ligature glyphs (U+FB00..FB04) in the font: the text layer must give back "fi", "ffl".
LIGS = {"ffi": "\ufb03", "ffl": "\ufb04", "ff": "\ufb00", "fi": "\ufb01", "fl": "\ufb02"}


def ligate(s):
    for k in ["ffi", "ffl", "ff", "fi", "fl"]:
        s = s.replace(k, LIGS[k])
    return s


def ligatures():
    pdf = new_pdf("Ligatures")
    pdf.add_page()
    pdf.set_font("Serif", "", 12)
    text = []
    for _ in range(8):
        para = paragraph(vocab=WORDS + AFFIX * 3)
        mc(pdf, 16, ligate(para))
        pdf.ln(4)
        text.append(para)
    save(pdf, "ligatures", "\n".join(text))


# 5. Hyphenation: words broken at line ends with a hyphen. The known text has the words whole
# (the hyphen is the layout's, not the text's), as pdftotext reads them (issue 15).
def hyphenation():
    pdf = new_pdf("Hyphenation")
    pdf.add_page()
    pdf.set_font("DejaVu", "", 11)
    lines = []
    text_lines = []
    long_words = ["harbourmaster", "lighthouse", "afternoon", "remarkable", "understanding",
                  "extraordinary", "international", "communication", "neighbourhood"]
    for i in range(40):
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 8))]
        lw = rng.choice(long_words)
        cut = len(lw) // 2
        line = " ".join(words) + " " + lw[:cut] + "-"
        nxt_start = lw[cut:]
        lines.append((line, nxt_start))
        text_lines.append(" ".join(words) + " " + lw)
    y = 60
    carry = ""
    for line, nxt in lines:
        full = (carry + " " + line).strip()
        pdf.text(60, y, full)
        carry = nxt
        y += 15
    pdf.text(60, y, carry + " end.")
    text_lines.append("end.")
    save(pdf, "hyphenation", "\n".join(text_lines))


# 6. A large document: 60 pages of dense prose.
def large():
    pdf = new_pdf("Large document")
    text = []
    pdf.set_font("DejaVu", "", 9)
    for p in range(60):
        pdf.add_page()
        for _ in range(7):
            para = paragraph(6)
            mc(pdf, 11, para, align="J")
            text.append(para)
    save(pdf, "large", "\n".join(text))


# 7. A standard (non-embedded) font with WinAnsiEncoding and accented Latin-1 text.
def core_font():
    pdf = new_pdf("Core Helvetica")
    pdf.add_page()
    pdf.set_font("Helvetica", "", 11)
    text = []
    extra = ["café", "naïve", "façade", "über", "déjà", "señor", "crème", "brûlée"]
    for _ in range(10):
        para = paragraph(vocab=WORDS + extra)
        mc(pdf, 15, para)
        text.append(para)
    save(pdf, "core-helvetica", "\n".join(text))


# 8. Hand-written PDF like TeX output: no space characters (words placed by TJ offsets),
#    a Type1 font with a Differences encoding naming the fi/fl ligature glyphs, kerning.
def raw_pdf(objects, info=None, trailer_extra=b""):
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, trailer_extra, xref))
    return out.getvalue()


def stream(data, compress=True):
    if compress:
        data = zlib.compress(data)
        return b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def pdf_str(s):
    return b"(" + s.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def tex_like():
    # Codes: ASCII letters as themselves; fi -> 1, fl -> 2 via Differences.
    lines = []
    for _ in range(30):
        lines.append(sentence(rng.randint(6, 10), vocab=WORDS + AFFIX * 2))
    ops = [b"BT /F1 10 Tf 12 TL 72 760 Td"]
    for line in lines:
        parts = []
        for w in line.split(" "):
            enc = w.encode("latin-1").replace(b"fi", b"\x01").replace(b"fl", b"\x02")
            # kern inside the word a little, then a word gap of 333/1000 em, no space glyph
            if len(enc) > 3:
                parts.append(pdf_str(enc[:2]) + b" 15 " + pdf_str(enc[2:]))
            else:
                parts.append(pdf_str(enc))
        ops.append(b"[" + b" -333 ".join(parts) + b"] TJ T*")
    ops.append(b"ET")
    content = b"\n".join(ops)
    widths = b" ".join(b"500" for _ in range(1, 256))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        stream(content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /FirstChar 1 /LastChar 255 "
        b"/Widths [" + widths + b"] /Encoding << /Type /Encoding /BaseEncoding /WinAnsiEncoding "
        b"/Differences [1 /fi /fl] >> >>",
        b"<< /Title (TeX-like positioning) /Author (Paycall Test Corpus) "
        b"/CreationDate (D:20261123093000Z) >>",
    ]
    data = raw_pdf(objects, trailer_extra=b"/Info 6 0 R ")
    with open(os.path.join(CORPUS, "tex-like.pdf"), "wb") as f:
        f.write(data)
    with open(os.path.join(CORPUS, "tex-like.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


# Refusal cases and the demo sample.
def refused():
    pdf = new_pdf("Encrypted")
    pdf.add_page()
    pdf.set_font("DejaVu", "", 12)
    mc(pdf, 16, paragraph())
    pdf.set_encryption(owner_password="owner-secret", user_password="user-secret")
    save(pdf, "encrypted", where=BAD)

    from PIL import Image
    img = Image.new("RGB", (200, 120), (200, 30, 30))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    buf.seek(0)
    pdf = new_pdf("Scanned page")
    pdf.add_page()
    pdf.image(buf, x=50, y=50, w=400)
    save(pdf, "image-only", where=BAD)

    with open(os.path.join(BAD, "not-a-pdf.pdf"), "wb") as f:
        f.write(b"<!doctype html><html><body>Not a PDF at all</body></html>\n")
    with open(os.path.join(BAD, "damaged.pdf"), "wb") as f:
        f.write(b"%PDF-1.7\n" + bytes(rng.getrandbits(8) for _ in range(3000)))


def sample():
    pdf = new_pdf("Paycall sample PDF")
    pdf.set_keywords("x402, pdf, sample")
    pdf.add_page()
    pdf.set_font("DejaVu", "B", 18)
    mc(pdf, 24, "Paycall sample PDF")
    pdf.set_font("DejaVu", "", 11)
    body = ("This small document is served by paycall itself so that the free demo of "
            "/api/pdf always has a fixed input. It has two pages, a title and an author in "
            "its metadata, and text with ligatures such as efficient, fluffy and offline.")
    mc(pdf, 15, ligate(body))
    pdf.add_page()
    mc(pdf, 15, "The second page says that text is returned page by page, in "
                          "reading order, with the document's metadata.")
    os.makedirs("static", exist_ok=True)
    pdf.output(os.path.join("static", "paycall-sample.pdf"))


# 9. Encrypted with an empty user password (permissions only): opens without a password, so
#    its text is read like any other.
def permissions_only():
    pdf = new_pdf("Permissions only")
    pdf.add_page()
    pdf.set_font("DejaVu", "", 12)
    text = [paragraph() for _ in range(4)]
    for para in text:
        mc(pdf, 16, para)
    pdf.set_encryption(owner_password="owner-secret")
    save(pdf, "permissions-only", "\n".join(text))


multipage()
two_column("two-column", "DejaVu")
two_column("two-column-serif", "Serif", pages=3, gutter=8)  # a narrow gutter: 0.8 em
non_latin()
ligatures()
hyphenation()
large()
core_font()
tex_like()
refused()
sample()
permissions_only()
print("written to", OUT)
