#!/usr/bin/env python3
"""Generates fixtures/pdf/modes: one small PDF per failure mode of issue 15 (real-world files
that /api/pdf read badly or answered 422), each with its true text in <name>.txt.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install fonttools==4.55.3
    /tmp/venv/bin/python scripts/pdf-modes.py fixtures/pdf     # from the repository root

The PDF bytes are written directly (the structures that broke are what producers write, not
what a PDF library would): indirect /Filter and /DecodeParms, Type0 fonts whose /ToUnicode is
the name /Identity-H, embedded and predefined CMaps with mixed code lengths, ToUnicode CMaps
whose code lengths differ from the font's, an invisible OCR layer (3 Tr) over a scan,
right-to-left scripts drawn in visual order, Symbol and a TeX font's built-in encoding,
AcroForm field values, glyph-by-glyph positioned double letters in a condensed font, Adobe's
CJK collections through Identity-H without ToUnicode, a CFF font's built-in encoding, a
Type3 font whose glyphs are named by their codes, vertical writing (Identity-V), TeX's
accents drawn over their letters, a TrueType cmap with Kangxi radical aliases,
a space glyph the pen backs out of, `endstream` on
the data's line, three- and four-byte codes of an embedded CMap, content-stream tokens lopdf's
parser cannot read, form fields, glyph names with a `.suffix`, CFF fonts whose glyph names no list knows (Arabic
glyphs named after their Unicode names, ArabTeX's `char92`), letters of the other direction
inside right-to-left words, an OCR layer's letter-spaced words, indices and exponents set
a little apart, text drawn again at the same place later in the page, a font sample's letters
set apart by space glyphs. fontTools
subsets DejaVu Sans (Debian fonts-dejavu-core) for the embedded TrueType and builds the small
CFF program. Deterministic.
"""
import io
import os
import sys
import zlib

OUT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "fixtures/pdf", "modes")
os.makedirs(OUT, exist_ok=True)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def pdf(objects):
    """A PDF from object bodies (object i+1 = objects[i]; bytes or str)."""
    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offs = []
    for i, body in enumerate(objects):
        if isinstance(body, str):
            body = body.encode("latin-1")
        offs.append(len(out))
        out += b"%d 0 obj\n" % (i + 1) + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for o in offs:
        out += b"%010d 00000 n \n" % o
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def stream(data, extra="", compress=False):
    if isinstance(data, str):
        data = data.encode("latin-1")
    if compress:
        data = zlib.compress(data, 9)
        if "/Filter" not in extra:
            extra += " /Filter /FlateDecode"
    return b"<< /Length %d %s >>\nstream\n" % (len(data), extra.encode()) + data + b"\nendstream"


def hex2(codes, width=2):
    return "<" + "".join("%0*X" % (width * 2, c) for c in codes) + ">"


def utf16hex(s):
    return "<" + s.encode("utf-16-be").hex().upper() + ">"


def tounicode(pairs, codespace="<0000> <FFFF>", width=2):
    """A ToUnicode CMap from (code, text) pairs, bfchar entries."""
    body = "".join("%s %s\n" % (hex2([c], width), utf16hex(t)) for c, t in pairs)
    return ("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
            "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
            "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
            "1 begincodespacerange\n%s\nendcodespacerange\n"
            "%d beginbfchar\n%sendbfchar\nendcmap\n"
            "CMapName currentdict /CMap defineresource pop\nend\nend\n"
            % (codespace, len(pairs), body))


def write(name, objects, text):
    with open(os.path.join(OUT, name + ".pdf"), "wb") as f:
        f.write(pdf(objects))
    with open(os.path.join(OUT, name + ".txt"), "w", encoding="utf-8") as f:
        f.write(text.strip() + "\n")


def page_objs(content_ref, resources, extra=""):
    return ("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %s "
            "/Resources %s %s >>" % (content_ref, resources, extra))


HELV = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"


def identity_h_page(content, base_font, cid_font, pairs):
    """The objects of a one-page file whose content stream (latin-1 text) draws in F1, a
    Type0 font with Identity-H codes: `cid_font` is the descendant's /Subtype and the rest of
    its dictionary after the system info (`/CIDFontType2 … /DW 600`), `pairs` its ToUnicode."""
    subtype, rest = cid_font.split(" ", 1)
    return [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content.encode("latin-1"), compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /%s /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode 7 0 R >>" % base_font,
        "<< /Type /Font /Subtype %s /BaseFont /%s /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> %s >>" % (subtype, base_font, rest),
        stream(tounicode(pairs), compress=True),
    ]


def helvetica_page(content):
    """The objects of a one-page file whose content stream draws `content` in Helvetica (F1)."""
    return [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        HELV,
    ]


def coded(text):
    """Distinct characters of `text` numbered from 1: (code of each char, (code, char) pairs)."""
    table = {}
    for ch in text:
        if ch not in table:
            table[ch] = len(table) + 1
    return [table[ch] for ch in text], sorted((c, ch) for ch, c in table.items())


# 1. Indirect /Filter: an invoice whose page stream says /Filter 5 0 R → [/FlateDecode]; page 2
#    draws a form whose /Filter is an indirect name and a Type0 font whose ToUnicode stream has
#    an indirect filter array and /DecodeParms [null].
def indirect_filter():
    p1 = "BT /F1 14 Tf 72 720 Td (Invoice 2024-118 issued to Harbour Supplies Ltd) Tj 0 -20 Td (Total due 1250.00 EUR) Tj ET"
    line2 = "Payment terms thirty days net"
    codes, pairs = coded(line2)
    form = "BT /F2 12 Tf 72 680 Td %s Tj ET" % hex2(codes)
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
        page_objs("4 0 R", "<< /Font << /F1 8 0 R >> >>"),
        stream(p1, "/Filter 5 0 R", compress=True),
        "[/FlateDecode]",
        page_objs("7 0 R", "<< /XObject << /Fm1 9 0 R >> >>"),
        stream("/Fm1 Do", "/Filter /FlateDecode /DecodeParms 13 0 R", compress=True),
        HELV,
        stream(form, "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F2 11 0 R >> >> /Filter 10 0 R", compress=True),
        "/FlateDecode",
        "<< /Type /Font /Subtype /Type0 /BaseFont /Terms /Encoding /Identity-H /DescendantFonts [12 0 R] /ToUnicode 14 0 R >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /Terms /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 550 >>",
        "<< /Predictor 1 >>",
        stream(tounicode(pairs), "/Filter 15 0 R /DecodeParms [null]", compress=True),
        "[/FlateDecode]",
    ]
    write("indirect-filter", objs,
          "Invoice 2024-118 issued to Harbour Supplies Ltd\nTotal due 1250.00 EUR\n" + line2)


# 2. Type0 fonts with /ToUnicode /Identity-H (a name): one with an embedded TrueType subset
#    (codes are glyph ids, the font's cmap tells their text), one without a font program whose
#    codes are the characters themselves.
def identity_name():
    from fontTools import subset
    from fontTools.ttLib import TTFont

    text1 = "Rechnung Nummer 4711 Größe Betrag"
    opts = subset.Options()
    opts.name_IDs = []
    opts.notdef_outline = True
    opts.drop_tables += ["GSUB", "GPOS", "GDEF", "kern"]
    font = TTFont(DEJAVU)
    sub = subset.Subsetter(opts)
    sub.populate(text=text1)
    sub.subset(font)
    buf = io.BytesIO()
    font.save(buf)
    ttf = buf.getvalue()
    cmap = font.getBestCmap()
    order = font.getGlyphOrder()
    gid = {ch: order.index(cmap[ord(ch)]) for ch in set(text1)}
    upm = font["head"].unitsPerEm
    widths = " ".join("%d [%d]" % (g, round(font["hmtx"][order[g]][0] * 1000 / upm)) for g in sorted(set(gid.values())))
    text2 = "Delivery address Quay Street 9"
    c1 = hex2([gid[ch] for ch in text1])
    c2 = hex2([ord(ch) for ch in text2])
    content = "BT /F1 14 Tf 72 720 Td %s Tj ET BT /F2 12 Tf 72 690 Td %s Tj ET" % (c1, c2)
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R /F2 8 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /ABCDEF+DejaVuSans /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode /Identity-H >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABCDEF+DejaVuSans /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /CIDToGIDMap /Identity /W [%s] /FontDescriptor 7 0 R >>" % widths,
        "<< /Type /FontDescriptor /FontName /ABCDEF+DejaVuSans /Flags 4 /FontBBox [-1021 -463 1793 1232] /ItalicAngle 0 /Ascent 928 /Descent -236 /CapHeight 729 /StemV 80 /FontFile2 10 0 R >>",
        "<< /Type /Font /Subtype /Type0 /BaseFont /PlainUnicode /Encoding /Identity-H /DescendantFonts [9 0 R] /ToUnicode /Identity-H >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /PlainUnicode /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 600 >>",
        stream(ttf, "/Length1 %d" % len(ttf), compress=True),
    ]
    write("type0-identity-name", objs, text1 + "\n" + text2)


# 3. Type0 fonts with CMaps as ConTeXt, OCR layers and CJK producers write them.
def cmaps():
    # a) Identity-H codes, but a ToUnicode written with one-byte source codes.
    t1 = "Chapter one of the manual"
    codes1, pairs1 = coded(t1)
    tu1 = tounicode(pairs1, codespace="<00> <FF>", width=1)
    # b) An embedded Encoding CMap with one- and two-byte codes (ASCII as one byte, the rest as
    #    two bytes from 0x8000), CIDs by cidrange from a parent CMap (usecmap), and a ToUnicode
    #    over the same codespace, with a two-character destination (the fi ligature glyph).
    t2 = "Lösungsansatz für fünf Fälle"
    b2 = bytearray()
    accents = {"ö": 0x8001, "ü": 0x8002, "ä": 0x8003, "Ä": 0x8004}
    for ch in t2:
        if ch in accents:
            b2 += accents[ch].to_bytes(2, "big")
        else:
            b2.append(ord(ch))
    b2 += b" " + (0x8005).to_bytes(2, "big") + b"nal"  # "final" with an fi glyph
    t2 += " final"
    parent = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
              "/CMapName /Mixed-Base def /CMapType 1 def\n"
              "2 begincodespacerange <00> <7F> <8000> <FFFF> endcodespacerange\n"
              "1 begincidrange <20> <7E> 32 endcidrange\n"
              "endcmap CMapName currentdict /CMap defineresource pop end end\n")
    child = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
             "/Mixed-Base usecmap\n/CMapName /Mixed-H def /CMapType 1 def\n"
             "1 begincidrange <8001> <8005> 300 endcidrange\n"
             "endcmap CMapName currentdict /CMap defineresource pop end end\n")
    tu2 = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
           "/CMapName /Mixed-UCS def /CMapType 2 def\n"
           "2 begincodespacerange <00> <7F> <8000> <FFFF> endcodespacerange\n"
           "1 beginbfrange <20> <7E> <0020> endbfrange\n"
           "5 beginbfchar <8001> <00F6> <8002> <00FC> <8003> <00E4> <8004> <00C4> <8005> <00660069> endbfchar\n"
           "endcmap CMapName currentdict /CMap defineresource pop end end\n")
    # c) An OCR layer: invisible text (3 Tr) in a glyphless font over a scanned image, codes as
    #    Unicode through a Tesseract-style ToUnicode (one range over every code).
    t3 = "Scanned letter from the town council"
    tu3 = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
           "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
           "/CMapName /Adobe-Identify-UCS def /CMapType 2 def\n"
           "1 begincodespacerange <0000> <FFFF> endcodespacerange\n"
           "1 beginbfrange <0000> <FFFF> <0000> endbfrange\nendcmap\n"
           "CMapName currentdict /CMap defineresource pop end end\n")
    img = bytes([200]) * 64
    # d) A simple font whose ToUnicode uses two-byte source codes.
    t4 = "Appendix with tables"
    tu4 = tounicode([(ord(c), c) for c in sorted(set(t4))])
    content = (
        "BT /F1 12 Tf 72 720 Td %s Tj ET\n" % hex2(codes1)
        + "BT /F2 12 Tf 72 700 Td <%s> Tj ET\n" % b2.hex().upper()
        + "q 400 0 0 100 72 560 cm /Im1 Do Q\n"
        + "BT 3 Tr /F3 10 Tf 1 0 0 1 72 600 Tm 120 Tz %s Tj ET\n" % hex2([ord(c) for c in t3])
        + "BT /F4 12 Tf 72 540 Td (%s) Tj ET\n" % t4)
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R /F2 8 0 R /F3 13 0 R /F4 16 0 R >> /XObject << /Im1 15 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /TeXGyre /Encoding /Identity-H /DescendantFonts [6 0 R] /ToUnicode 7 0 R >>",
        "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /TeXGyre /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 520 >>",
        stream(tu1, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /Mixed /Encoding 9 0 R /DescendantFonts [11 0 R] /ToUnicode 12 0 R >>",
        stream(child, "/Type /CMap /CMapName /Mixed-H /UseCMap 10 0 R /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >>"),
        stream(parent, "/Type /CMap /CMapName /Mixed-Base /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >>"),
        "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Mixed /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 /W [32 126 520 300 [560 560 560 640 560]] >>",
        stream(tu2, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /GlyphLessFont /Encoding /Identity-H /DescendantFonts [14 0 R] /ToUnicode 17 0 R >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /GlyphLessFont /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 500 /CIDToGIDMap /Identity >>",
        stream(img, "/Type /XObject /Subtype /Image /Width 8 /Height 8 /ColorSpace /DeviceGray /BitsPerComponent 8"),
        "<< /Type /Font /Subtype /TrueType /BaseFont /Arial /FirstChar 32 /LastChar 126 /Encoding /WinAnsiEncoding /ToUnicode 18 0 R >>",
        stream(tu3, compress=True),
        stream(tu4, compress=True),
    ]
    write("type0-cmaps", objs, "\n".join([t1, t2, t3, t4]))


# 4. Predefined CJK CMaps without ToUnicode: Shift-JIS, GBK and Big5 bytes, and UCS-2.
def predefined():
    lines = [("90ms-RKSJ-H", "shift_jis", "東京都 請求書 2024年"),
             ("GBK-EUC-H", "gbk", "北京 发票 金额"),
             ("ETen-B5-H", "big5", "臺北 發票"),
             ("KSCms-UHC-H", "cp949", "서울 청구서"),
             ("UniJIS-UCS2-H", "utf-16-be", "大阪 見積書")]
    content = ""
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        None,
        None,
    ]
    fonts = []
    for i, (cmap, codec, text) in enumerate(lines):
        content += "BT /F%d 12 Tf 72 %d Td <%s> Tj ET\n" % (i, 720 - 24 * i, text.encode(codec).hex().upper())
        n = len(objs) + 1
        ordering = {"shift_jis": "Japan1", "gbk": "GB1", "big5": "CNS1", "cp949": "Korea1", "utf-16-be": "Japan1"}[codec]
        objs.append("<< /Type /Font /Subtype /Type0 /BaseFont /CJK%d /Encoding /%s /DescendantFonts [%d 0 R] >>" % (i, cmap, n + 1))
        objs.append("<< /Type /Font /Subtype /CIDFontType0 /BaseFont /CJK%d /CIDSystemInfo << /Registry (Adobe) /Ordering (%s) /Supplement 2 >> /DW 1000 >>" % (i, ordering))
        fonts.append("/F%d %d 0 R" % (i, n))
    objs[2] = page_objs("4 0 R", "<< /Font << %s >> >>" % " ".join(fonts))
    objs[3] = stream(content.encode("latin-1"), compress=True)
    write("cjk-predefined-cmaps", objs, "\n".join(t for _, _, t in lines))


# 5. Right-to-left scripts as Word and LibreOffice draw them: glyphs in visual order, left to
#    right; and a line whose glyphs come in logical order, each placed right to left.
def rtl():
    he = "שלום לכם מחיר 120 שקל"
    ar = "مرحبا بالعالم"
    he2 = "תודה רבה"
    codes, pairs = coded(he + ar + he2 + " ")
    table = dict((ch, c) for c, ch in pairs)

    def visual(s):
        # What a shaper lays out left to right for these lines: the RTL runs reversed, the
        # number kept as written.
        parts = s.split(" ")
        out = []
        for p in reversed(parts):
            out.append(p if p.isdigit() else p[::-1])
        return " ".join(out)

    content = ""
    for y, s in ((720, he), (690, ar)):
        content += "BT /F1 14 Tf 72 %d Td %s Tj ET\n" % (y, hex2([table[c] for c in visual(s)]))
    # Logical order, each glyph placed from the right (DW 600 → 8.4 pt per glyph at 14 pt).
    x = 300.0
    content += "BT /F1 14 Tf "
    for ch in he2:
        x -= 8.4
        content += "1 0 0 1 %.1f 660 Tm %s Tj " % (x, hex2([table[ch]]))
    content += "ET\n"
    objs = identity_h_page(content, "ArialUnicode", "/CIDFontType2 /DW 600", pairs)
    write("rtl", objs, "\n".join([he, ar, he2]))


# 6. Symbol (no /Encoding: the font's own) and a TeX maths font whose built-in encoding is in
#    the embedded Type1 program (pdfTeX writes no /Encoding for Computer Modern).
def symbol_tex():
    type1 = ("%!PS-AdobeFont-1.0: CMMI10 003.002\n/FontName /ABCDEF+CMMI10 def\n"
             "/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n"
             "dup 11 /alpha put\ndup 12 /beta put\ndup 13 /gamma put\ndup 14 /delta put\n"
             "dup 25 /pi put\ndup 27 /sigma put\ndup 61 /slash put\ndup 120 /x put\n"
             "readonly def\ncurrentfile eexec\n").encode("latin-1")
    binary = bytes((i * 37 + 11) % 256 for i in range(64))
    prog = type1 + binary + b"\n" + b"0" * 64 + b"\ncleartomark\n"
    content = ("BT /F1 12 Tf 72 720 Td (a + b = g) Tj 0 -20 Td (p \\273 3.14, D x) Tj ET\n"
               "BT /F2 12 Tf 72 680 Td (\\013 \\014 \\015 \\016 \\031 \\033) Tj ET\n")
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R /F2 6 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Symbol >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+CMMI10 /FirstChar 11 /LastChar 27 /Widths [640 566 518 444 0 0 0 0 0 0 0 0 0 0 570 0 571] /FontDescriptor 7 0 R >>",
        "<< /Type /FontDescriptor /FontName /ABCDEF+CMMI10 /Flags 4 /FontBBox [-32 -250 1048 750] /ItalicAngle -14 /Ascent 694 /Descent -194 /CapHeight 683 /StemV 72 /FontFile 8 0 R >>",
        stream(prog, "/Length1 %d /Length2 %d /Length3 %d" % (len(type1), len(binary) + 1, 77)),
    ]
    # The last line's letters are all set apart by space glyphs of one width: pdftotext reads
    # them as one word (its letter-spacing rule, see 29), and so do we since issue 15's sixth
    # round.
    write("symbol-tex", objs, "α + β = γ\nπ ≈ 3.14, Δ ξ\nαβγδπσ")


# 7. AcroForm: field values live in the widgets' appearance streams (and /V), not in the page.
def acroform():
    content = "BT /F1 12 Tf 72 720 Td (Name:) Tj 0 -30 Td (City:) Tj ET"
    ap1 = "/Tx BMC BT /F1 12 Tf 2 4 Td (Jane Doe) Tj ET EMC"
    ap2 = "/Tx BMC BT /F1 12 Tf 2 4 Td (Rotterdam) Tj ET EMC"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [5 0 R 6 0 R] /DA (/Helv 0 Tf 0 g) >> >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 9 0 R >> >>", "/Annots [5 0 R 6 0 R]"),
        stream(content),
        "<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (Jane Doe) /Rect [120 714 300 734] /P 3 0 R /AP << /N 7 0 R >> >>",
        "<< /Type /Annot /Subtype /Widget /FT /Tx /T (city) /V (Rotterdam) /Rect [120 684 300 704] /P 3 0 R /AP << /N 8 0 R >> >>",
        stream(ap1, "/Type /XObject /Subtype /Form /BBox [0 0 180 20] /Resources << /Font << /F1 9 0 R >> >>"),
        stream(ap2, "/Type /XObject /Subtype /Form /BBox [0 0 180 20] /Resources << /Font << /F1 9 0 R >> >>"),
        HELV,
    ]
    write("acroform", objs, "Name: Jane Doe\nCity: Rotterdam")


# 8. A government form that places every glyph with its own Td, in a condensed face (Tz 70):
#    double letters sit 0.19 em apart and must not be taken for overprinting ("fake bold").
def glyph_positioned():
    words = ["rattachement", "installation", "allocation", "successeur"]
    widths = {c: w for c, w in zip("abcdefghijklmnopqrstuvwxyz", [556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500])}
    content = "BT /F1 10 Tf 70 Tz 72 720 Td "
    x = 0.0
    for w in words:
        for ch in w:
            content += "(%s) Tj %.3f 0 Td " % (ch, widths[ch] * 10 / 1000 * 0.7)
        content += "3.5 0 Td "
    content += "ET"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /ArialNarrow /FirstChar 97 /LastChar 122 /Widths [%s] /Encoding /WinAnsiEncoding >>" % " ".join(str(widths[c]) for c in "abcdefghijklmnopqrstuvwxyz"),
    ]
    write("glyph-positioned", objs, " ".join(words))

# 9. Adobe's CJK collections shown through Identity-H with no ToUnicode and no cmap in the font
#    (dvipdfmx's pLaTeX output with CFF CID fonts): only the collection's CID → Unicode table
#    tells the text. CIDs from Adobe's cid2code.txt; each word its own Tj.
def cjk_collection_identity():
    lines = [("Japan1", [[3174, 1688], [2661, 1659, 2427]], "東京 請求書"),
             ("GB1", [[1050, 2264], [1599, 3024]], "北京 发票"),
             ("CNS1", [[4221, 783], [3311, 2883]], "臺北 發票"),
             ("Korea1", [[2226, 2574], [2898, 1203, 2226]], "서울 청구서")]
    content = ""
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        None,
        None,
    ]
    fonts = []
    for i, (ordering, words, _) in enumerate(lines):
        content += "BT /F%d 12 Tf 72 %d Td %s Tj 30 0 Td %s Tj ET\n" % (
            i, 720 - 24 * i, hex2(words[0]), hex2(words[1]))
        n = len(objs) + 1
        objs.append("<< /Type /Font /Subtype /Type0 /BaseFont /CJK%d-Identity-H /Encoding /Identity-H /DescendantFonts [%d 0 R] >>" % (i, n + 1))
        objs.append("<< /Type /Font /Subtype /CIDFontType0 /BaseFont /CJK%d /CIDSystemInfo << /Registry (Adobe) /Ordering (%s) /Supplement 6 >> /DW 1000 >>" % (i, ordering))
        fonts.append("/F%d %d 0 R" % (i, n))
    objs[2] = page_objs("4 0 R", "<< /Font << %s >> >>" % " ".join(fonts))
    objs[3] = stream(content.encode("latin-1"), compress=True)
    write("cjk-collection-identity", objs, "\n".join(t for _, _, t in lines))


# 10. A simple font whose embedded CFF program (/FontFile3 /Type1C) carries its own encoding
#     and the PDF names none (dvipdfmx and Ghostscript embed TeX's fonts so): codes 11-13 are
#     alpha, beta and the fi ligature only by the CFF's encoding and charset.
def cff_builtin():
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    names = [".notdef", "alpha", "beta", "fi", "n", "d", "space"]
    fb = FontBuilder(1000, isTTF=False)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({})
    strings = {}
    for g in names:
        pen = T2CharStringPen(500, None)
        if g != "space":
            pen.moveTo((50, 0))
            pen.lineTo((450, 0))
            pen.lineTo((450, 600))
            pen.closePath()
        strings[g] = pen.getCharString()
    fb.setupCFF("ABCDEF+CMBuiltin", {"FullName": "CMBuiltin"}, strings, {})
    cff = fb.font["CFF "].cff
    enc = [".notdef"] * 256
    for code, g in [(11, "alpha"), (12, "beta"), (13, "fi"), (32, "space"), (110, "n"), (100, "d")]:
        enc[code] = g
    cff.topDictIndex[0].Encoding = enc
    buf = io.BytesIO()
    cff.compile(buf, fb.font)
    prog = buf.getvalue()
    content = "BT /F1 12 Tf 72 720 Td (\\013 \\014 \\015nd) Tj ET\n"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+CMBuiltin /FirstChar 11 /LastChar 110 /Widths [%s] /FontDescriptor 6 0 R >>" % " ".join(["500"] * 100),
        "<< /Type /FontDescriptor /FontName /ABCDEF+CMBuiltin /Flags 4 /FontBBox [0 0 500 600] /ItalicAngle 0 /Ascent 600 /Descent 0 /CapHeight 600 /StemV 72 /FontFile3 7 0 R >>",
        stream(prog, "/Subtype /Type1C", compress=True),
    ]
    write("cff-builtin", objs, "α β find")


# 11. A bitmap Type3 font as dvips + Ghostscript write TeX's PK fonts: every glyph named by its
#     code (/a65 /a66 …), names no glyph list knows; poppler reads them as the code point.
def type3_numeric_names():
    text = "Numbered glyphs read as text"
    used = sorted(set(text.replace(" ", "")))
    procs = " ".join("/a%d 8 0 R" % ord(c) for c in used)
    diffs = " ".join("%d /a%d" % (ord(c), ord(c)) for c in used)
    widths = " ".join("6" for _ in range(32, 123))
    words = text.split()
    content = "BT /F1 12 Tf 72 720 Td " + " ".join(
        "(%s) Tj %d 0 Td" % (w, 8 * len(w) + 6) for w in words) + " ET\n"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type3 /FontBBox [0 0 8 8] /FontMatrix [0.1 0 0 0.1 0 0] "
        "/FirstChar 32 /LastChar 122 /Widths [%s] /Encoding 6 0 R /CharProcs 7 0 R "
        "/Resources << >> >>" % widths,
        "<< /Type /Encoding /Differences [%s] >>" % diffs,
        "<< %s >>" % procs,
        stream("6 0 0 0 6 8 d1\n0 0 5 7 re f\n"),
    ]
    write("type3-numeric-names", objs, text)


# 12. Vertical writing (Identity-V): two columns of Japanese, read top to bottom and right to
#     left, with a TJ adjustment inside a column, under a horizontal title.
def vertical():
    title = [34, 35, 36]  # "ABC" in Adobe-Japan1
    cols = [[[3174, 1688], [2661, 1659, 2427]], [[1125, 843]]]  # 東京 請求書 / 亜あ
    content = "BT /F0 12 Tf 72 740 Td %s Tj ET\n" % hex2(title)
    for i, words in enumerate(cols):
        # In vertical mode a positive adjustment moves down the column (PDF 32000 9.4.4).
        parts = " 500 ".join(hex2(w) for w in words)
        content += "BT /F1 14 Tf %d 700 Td [%s] TJ ET\n" % (500 - 40 * i, parts)
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F0 5 0 R /F1 6 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /Mincho-H /Encoding /Identity-H /DescendantFonts [7 0 R] >>",
        "<< /Type /Font /Subtype /Type0 /BaseFont /Mincho-V /Encoding /Identity-V /DescendantFonts [7 0 R] >>",
        "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Mincho /CIDSystemInfo << /Registry (Adobe) /Ordering (Japan1) /Supplement 6 >> /DW 1000 /W [34 [600 600 600]] >>",
    ]
    write("vertical", objs, "ABC\n東京 請求書\n亜あ")


# 13. Accents as TeX's \\accent draws them: the spacing accent moved over the next letter, then
#     the letter under it (Cyrillic stress marks, Latin with OT1 fonts): poppler joins them as
#     letter + combining accent.
def tex_accents():
    widths = [278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278]
    widths += [556] * 10 + [278, 278, 584, 584, 584, 556, 1015]
    widths += [667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667,
               778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333]
    widths += [556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556,
               556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584]
    widths += [556] * (180 - 32 + 1 - len(widths))
    widths[0xA8 - 32] = widths[0xB4 - 32] = 333
    # Helvetica's widths (WinAnsi): the accents 0xA8 and 0xB4 are 333 wide.
    content = ("BT /F1 12 Tf 72 720 Td [(caf) -111 (\\264) 444 (e au lait)] TJ ET\n"
               "BT /F1 12 Tf 72 700 Td [(co) -111 (\\250) 444 (operation) -111 (\\264) 444 (a)] TJ ET\n")
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding "
        "/FirstChar 32 /LastChar 180 /Widths [%s] >>" % " ".join(str(w) for w in widths),
    ]
    write("tex-accents", objs, "cafe\u0301 au lait\ncoo\u0308perationa\u0301")


# 14. An embedded TrueType whose cmap maps a Kangxi radical and its ideograph to one glyph
#     (U+2F47 and U+65E5 日, as IPAexMincho does), shown through Identity-H with no ToUnicode:
#     the text is the ideograph, as poppler reads it.
def truetype_cmap_aliases():
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.ttGlyphPen import TTGlyphPen

    order = [".notdef", "sun", "book"]
    fb = FontBuilder(1000, isTTF=True)
    fb.setupGlyphOrder(order)
    fb.setupCharacterMap({0x2F47: "sun", 0x65E5: "sun", 0x672C: "book", 0xF9B0: "book"})
    glyphs = {}
    for g in order:
        pen = TTGlyphPen(None)
        pen.moveTo((100, 0))
        pen.lineTo((900, 0))
        pen.lineTo((900, 800))
        pen.closePath()
        glyphs[g] = pen.glyph()
    fb.setupGlyf(glyphs)
    fb.setupHorizontalMetrics({g: (1000, 100) for g in order})
    fb.setupHorizontalHeader(ascent=880, descent=-120)
    fb.setupNameTable({"familyName": "Aliases", "styleName": "Regular"})
    fb.setupOS2()
    fb.setupPost()
    # Fixed timestamps, so the file is the same on every run.
    fb.font["head"].created = fb.font["head"].modified = 0
    fb.font.recalcTimestamp = False
    buf = io.BytesIO()
    fb.save(buf)
    ttf = buf.getvalue()
    content = "BT /F1 12 Tf 72 720 Td <00010002> Tj ET\n"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /ABCDEF+Aliases /Encoding /Identity-H /DescendantFonts [6 0 R] >>",
        "<< /Type /Font /Subtype /CIDFontType2 /BaseFont /ABCDEF+Aliases /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /CIDToGIDMap /Identity /DW 1000 /FontDescriptor 7 0 R >>",
        "<< /Type /FontDescriptor /FontName /ABCDEF+Aliases /Flags 4 /FontBBox [0 -120 1000 880] /ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 800 /StemV 80 /FontFile2 8 0 R >>",
        stream(ttf, "/Length1 %d" % len(ttf), compress=True),
    ]
    write("truetype-cmap-aliases", objs, "日本")


# 15. A space glyph the pen backs out of (XeTeX inside Arabic words, at non-joining letters):
#     no word break, as pdftotext reads it; a space the pen moves past still is one.
def space_backed_out():
    content = "BT /F1 12 Tf 72 720 Td [(book) ( ) 278 (keeper) ( ) (day)] TJ ET\n"
    objs = helvetica_page(content)
    write("space-backed-out", objs, "bookkeeper day")


# 16. `endstream` on the stream data's own line after a space (VTeX writes `…ET endstream`):
#     lopdf drops such objects, poppler reads them.
def endstream_same_line():
    content = zlib.compress(b"BT /F1 12 Tf 72 720 Td (Typesetting ancient Greek) Tj ET", 9)
    page = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b" endstream"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        page,
        HELV,
    ]
    write("endstream-same-line", objs, "Typesetting ancient Greek")


# 17. An embedded Encoding CMap with three- and four-byte codes (EUC-TW's four-byte `8EA1xxxx`
#     plane codes, EUC-JP's three-byte `8Fxxxx`), ASCII as one byte; CIDs by cidrange and a
#     ToUnicode over the same code space (bfrange and bfchar at each length).
def wide_cmap_codes():
    words = [("Invoice", None), ("發票", 4), ("total", None), ("臺北", 4), ("ward", None), ("丂丄", 3)]
    four = {"發": 0x8EA1C4A1, "票": 0x8EA1C4A2, "臺": 0x8EA1C4A3, "北": 0x8EA1C4A4}
    three = {"丂": 0x8FB0A1, "丄": 0x8FB0A2}
    data = bytearray()
    for i, (w, n) in enumerate(words):
        if i:
            data += b" "
        for ch in w:
            if n == 4:
                data += four[ch].to_bytes(4, "big")
            elif n == 3:
                data += three[ch].to_bytes(3, "big")
            else:
                data += ch.encode("ascii")
    space = ("3 begincodespacerange <00> <7F> <8FA1A1> <8FFEFE> <8EA1A1A1> <8EA7FEFE> "
             "endcodespacerange\n")
    enc = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
           "/CMapName /Wide-H def /CMapType 1 def\n" + space +
           "3 begincidrange <20> <7E> 1 <8EA1C4A1> <8EA1C4A4> 200 <8FB0A1> <8FB0A2> 300 endcidrange\n"
           "endcmap CMapName currentdict /CMap defineresource pop end end\n")
    tu = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
          "/CMapName /Wide-UCS def /CMapType 2 def\n" + space +
          "2 beginbfrange <20> <7E> <0020> <8EA1C4A1> <8EA1C4A2> [<767C> <7968>] endbfrange\n"
          "4 beginbfchar <8EA1C4A3> <81FA> <8EA1C4A4> <5317> <8FB0A1> <4E02> <8FB0A2> <4E04> endbfchar\n"
          "endcmap CMapName currentdict /CMap defineresource pop end end\n")
    content = "BT /F1 12 Tf 72 720 Td <%s> Tj ET" % data.hex().upper()
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type0 /BaseFont /Wide /Encoding 6 0 R /DescendantFonts [7 0 R] /ToUnicode 8 0 R >>",
        stream(enc, "/Type /CMap /CMapName /Wide-H /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >>"),
        "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Wide /CIDSystemInfo << /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /DW 1000 /W [1 95 500] >>",
        stream(tu, compress=True),
    ]
    write("cmap-wide-codes", objs, " ".join(w for w, _ in words))


# 18. Content streams with tokens lopdf's parser cannot read, which made it stop and lose the rest
#     of the page: a stray `)`, an operator spelt with `.` and `_`, `1.2.3`, a lone `>`, an
#     unmatched `}`, an inline image whose unfiltered data holds ` EI ` and `(`. poppler drops
#     the operation the bad token lands in and reads on.
def bad_content_tokens():
    img = b"\x00 EI (\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"  # 16 bytes, as W × H says
    content = (b"BT /F1 12 Tf 72 720 Td (Shipping notice for order 5521) Tj ET\n"
               b"q 0.5 0 0 0.5 0 0 cm ) Q\n"
               b"BT /F1 12 Tf 72 700 Td (Carrier North Freight) Tj ET\n"
               b"my_op.x 1 0 0 RG\n"
               b"BT /F1 12 Tf 72 680 Td (Parcels 1.2.3 sealed) Tj 1.2.3 Tc 0 Tc ET\n"
               b"BT /F1 12 Tf > 72 660 Td (Signed by the warehouse clerk) Tj ET } \n"
               b"q 16 0 0 1 72 600 cm BI /W 16 /H 1 /BPC 8 /CS /G ID " + img + b"\nEI Q\n"
               b"BT /F1 12 Tf 72 640 Td (Received in good order) Tj ET\n")
    objs = helvetica_page(content)
    write("bad-content-tokens", objs,
          "Shipping notice for order 5521\nCarrier North Freight\nParcels 1.2.3 sealed\n"
          "Signed by the warehouse clerk\nReceived in good order")


# 19. A form as the answer's `fields` lists it: a field named through its parent
#     (`shipment.consignee`), a filled field with no appearance stream (viewers and poppler make
#     one from /DA and /V), a checked check box whose appearance is a drawn tick, an empty
#     field, a hidden one; each value just after its label, as forms place them. Text: what
#     the page and the appearances show, as pdftotext reads it.
def acroform_fields():
    content = ("BT /F1 12 Tf 72 720 Td (Consignee:) Tj 0 -30 Td (City:) Tj 0 -30 Td (Express:) Tj "
               "0 -30 Td (Notes:) Tj ET")
    ap1 = "/Tx BMC BT /F1 12 Tf 2 4 Td (Harbour Supplies Ltd) Tj ET EMC"
    tick = "0 g 2 2 m 8 0 l 16 16 l S"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [5 0 R 12 0 R 13 0 R] /DA (/Helv 12 Tf 0 g) /DR << /Font << /Helv 11 0 R >> >> >> >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 11 0 R >> >>", "/Annots [6 0 R 7 0 R 8 0 R 12 0 R 13 0 R]"),
        stream(content),
        "<< /T (shipment) /FT /Tx /Kids [6 0 R 7 0 R] >>",
        "<< /Type /Annot /Subtype /Widget /T (consignee) /Parent 5 0 R /V (Harbour Supplies Ltd) /Rect [138 714 388 734] /P 3 0 R /AP << /N 9 0 R >> >>",
        "<< /Type /Annot /Subtype /Widget /T (city) /Parent 5 0 R /V (Rotterdam) /DA (/Helv 12 Tf 0 g) /Rect [108 684 358 704] /P 3 0 R >>",
        "<< /Type /Annot /Subtype /Widget /FT /Btn /T (express) /V /Yes /AS /Yes /Rect [128 654 148 674] /P 3 0 R /AP << /N << /Yes 10 0 R /Off 14 0 R >> >> >>",
        stream(ap1, "/Type /XObject /Subtype /Form /BBox [0 0 250 20] /Resources << /Font << /F1 11 0 R >> >>"),
        stream(tick, "/Type /XObject /Subtype /Form /BBox [0 0 20 20]"),
        HELV,
        "<< /Type /Annot /Subtype /Widget /FT /Tx /T (notes) /Rect [118 624 368 644] /P 3 0 R /AP << /N 14 0 R >> >>",
        "<< /Type /Annot /Subtype /Widget /FT /Tx /T (internal) /V (do not show) /F 2 /Rect [118 600 368 620] /P 3 0 R >>",
        stream("/Tx BMC EMC", "/Type /XObject /Subtype /Form /BBox [0 0 250 20]"),
    ]
    write("acroform-fields", objs, "Consignee: Harbour Supplies Ltd\nCity: Rotterdam\nExpress:\nNotes:")


# 20. Glyph names with a suffix after a dot (`eacute.alt`, `afii10049.ital`, Arabic fonts'
#     `afii57415.isol`): the glyph list names the part before the dot (its specification's
#     rule). A simple font whose Differences name every letter so, no ToUnicode.
def glyph_name_suffixes():
    words = [
        ("Ångström", ["Aring.sc", "n", "g", "s", "t", "r", "odieresis.alt", "m"]),
        ("café", ["c", "a", "f", "eacute.alt"]),
        ("Straße", ["S", "t", "r", "a", "germandbls.sc", "e"]),
        ("Привет", ["afii10033.ital", "afii10082.ital", "afii10074.ital", "afii10067.ital",
                    "afii10070.ital", "afii10084.ital"]),
    ]
    names = []
    for _, ns in words:
        for n in ns:
            if n not in names:
                names.append(n)
    code = {n: 33 + i for i, n in enumerate(names)}
    shown = " ".join("".join("%02X" % code[n] for n in ns) for _, ns in words)
    content = "BT /F1 14 Tf 72 720 Td <%s> Tj ET" % shown.replace(" ", "20")
    diffs = "32 /space " + " ".join("/" + n for n in names)
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /SuffixNames /FirstChar 32 /LastChar %d /Widths [%s] /Encoding << /Type /Encoding /Differences [%s] >> >>"
        % (32 + len(names), " ".join(["250"] + ["600"] * len(names)), diffs),
    ]
    write("glyph-name-suffixes", objs, " ".join(w for w, _ in words))


def cff_font(font_name, names, enc_pairs):
    """A small CFF program (/FontFile3 /Type1C) whose glyphs are `names` (boxes) and whose own
    encoding puts them at the codes of `enc_pairs` [(code, name)]."""
    from fontTools.fontBuilder import FontBuilder
    from fontTools.pens.t2CharStringPen import T2CharStringPen

    names = [".notdef"] + [n for n in names if n != ".notdef"]
    fb = FontBuilder(1000, isTTF=False)
    fb.setupGlyphOrder(names)
    fb.setupCharacterMap({})
    strings = {}
    for g in names:
        pen = T2CharStringPen(500, None)
        if g != "space":
            pen.moveTo((50, 0))
            pen.lineTo((450, 0))
            pen.lineTo((450, 600))
            pen.closePath()
        strings[g] = pen.getCharString()
    fb.setupCFF(font_name, {"FullName": font_name.split("+")[-1]}, strings, {})
    cff = fb.font["CFF "].cff
    enc = [".notdef"] * 256
    for code, g in enc_pairs:
        enc[code] = g
    cff.topDictIndex[0].Encoding = enc
    buf = io.BytesIO()
    cff.compile(buf, fb.font)
    return buf.getvalue()


# 21. Simple fonts embedded as CFF with their own encoding, no /Encoding and no ToUnicode, as
#     Ghostscript embeds them for dvips: Traditional Arabic's glyphs named after their Unicode
#     names (`seeninitial`, `lamwithalefisolated`: no glyph list knows them, pdftotext passes
#     their codes through as Latin letters), drawn in visual order; and an ArabTeX-style font
#     whose glyphs are `char54`, `char61`…, names nobody knows, whose codes poppler passes
#     through (ASCII here), and so do we.
def cff_unicode_names():
    arabic = [(0x41, "seeninitial", "\ufeb3"), (0x42, "lammedial", "\ufee0"),
              (0x43, "aleffinal", "\ufe8e"), (0x44, "meemisolated", "\ufee1"),
              (0x45, "lamwithalefisolated", "\ufefb"), (0x20, "space", " ")]
    prog1 = cff_font("KYJYAS+TraditionalArabic", [n for _, n, _ in arabic],
                     [(c, n) for c, n, _ in arabic])
    prog2 = cff_font("RESJAX+xnsh14", ["char54", "char61", "char62"],
                     [(0x54, "char54"), (0x61, "char61"), (0x62, "char62")])
    # Logical "ﺳﻠﺎﻡ ﻻ", drawn left to right: the second word first, each word reversed.
    content = ("BT /F1 14 Tf 72 720 Td (E DCBA) Tj ET\n"
               "BT /F2 14 Tf 72 690 Td (Tab) Tj ET\n")
    widths = " ".join(["500"] * 96)
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R /F2 7 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /KYJYAS+TraditionalArabic /FirstChar 32 /LastChar 127 /Widths [%s] /FontDescriptor 6 0 R >>" % widths,
        "<< /Type /FontDescriptor /FontName /KYJYAS+TraditionalArabic /Flags 4 /FontBBox [0 0 500 600] /ItalicAngle 0 /Ascent 600 /Descent 0 /CapHeight 600 /StemV 72 /FontFile3 9 0 R >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /RESJAX+xnsh14 /FirstChar 32 /LastChar 127 /Widths [%s] /FontDescriptor 8 0 R >>" % widths,
        "<< /Type /FontDescriptor /FontName /RESJAX+xnsh14 /Flags 4 /FontBBox [0 0 500 600] /ItalicAngle 0 /Ascent 600 /Descent 0 /CapHeight 600 /StemV 72 /FontFile3 10 0 R >>",
        stream(prog1, "/Subtype /Type1C", compress=True),
        stream(prog2, "/Subtype /Type1C", compress=True),
    ]
    write("cff-unicode-names", objs, "\ufeb3\ufee0\ufe8e\ufee1 \ufefb\nTab")


# 22. Letters of the other direction inside a word (ArabTeX's fonts map some glyphs to Latin
#     letters, Beamer overlays put a letter inside an Arabic word) and a number glued to a
#     Hebrew word: pdftotext writes each such run between bidi embedding marks, so it is a
#     word of its own. The known text spells those words apart.
def rtl_embedded_runs():
    ar = "الجaبrي"
    he = "בשנת2024"
    codes, pairs = coded(ar + he)
    table = dict((ch, c) for c, ch in pairs)
    # Visual order, as a shaper lays the lines out: the RTL letters reversed around the
    # left-to-right runs, which keep their own order.
    vis_ar = "ي" + "r" + "ب" + "a" + "جلا"
    vis_he = "2024" + "תנשב"
    content = ""
    for y, s in ((720, vis_ar), (690, vis_he)):
        content += "BT /F1 14 Tf 72 %d Td %s Tj ET\n" % (y, hex2([table[c] for c in s]))
    objs = identity_h_page(content, "ArialUnicode", "/CIDFontType2 /DW 600", pairs)
    write("rtl-embedded-runs", objs, "الج a ب r ي\nבשנת 2024")


# 23. An OCR layer as a scanner writes it (EPSON Scan): invisible text (3 Tr) in a standard
#     font without /Widths, each word's letters spread by Tc over the word's width on the
#     scan, its last letter drawn apart at Tc 0, words after a space glyph with Tw. A line
#     made only of single letters is letter-spaced (poppler's rule): its words read whole.
def ocr_letter_spaced():
    words = [("9", 0.0, 0.0), ("North", 2.90, 0.58), ("Buona", 2.47, -1.41),
             ("Vista", 2.67, 1.75), ("Drive", 2.74, 0.72)]
    content = "BT 3 Tr /F1 12 Tf 72 Tz 1 0 0 1 93.6 648.96 Tm 0 Tw "
    for i, (w, tc, tw) in enumerate(words):
        head, last = (" " if i else "") + w[:-1], w[-1]
        if head.strip():
            content += "%.2f Tc %.2f Tw (%s) Tj 0 Tc " % (tc, tw, head)
        content += "(%s) Tj " % last
    content += "ET\nBT 3 Tr /F1 9 Tf 100 Tz 1 0 0 1 93.6 620 Tm -0.2 Tc (Agreemen) Tj 0 Tc (t) Tj "
    content += "-0.07 Tc 1.66 Tw ( No) Tj 0 Tc (.) Tj 0.5 Tw ( 010099) Tj ET\n"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(content, compress=True),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding /WinAnsiEncoding >>",
    ]
    write("ocr-letter-spaced", objs, "9 North Buona Vista Drive\nAgreement No. 010099")


# 24. Indices and exponents set a little apart (TeX's maths, an exam form's u_n): a glyph off
#     the baseline or at another size is a word of its own for pdftotext from a gap of 0.03 em
#     (0.1 em along the baseline), so `u n` and `x 2`; a footnote mark touching its word stays
#     in it (`done1`).
def off_baseline():
    content = ("BT /F1 12 Tf 72 720 Td (the sequence u) Tj /F1 8 Tf -3 Ts [-60 (n)] TJ "
               "/F1 12 Tf 0 Ts ( converges,) Tj ET\n"
               "BT /F1 12 Tf 72 700 Td (x) Tj /F1 8 Tf 5 Ts [-60 (2)] TJ "
               "/F1 12 Tf 0 Ts ( grows) Tj ET\n"
               "BT /F1 12 Tf 72 680 Td (we are done) Tj /F1 8 Tf 5 Ts (1) Tj ET\n")
    objs = helvetica_page(content)
    write("off-baseline", objs, "the sequence u n converges,\nx 2 grows\nwe are done1")


# 25. The same text drawn again at the same place later in the page (an exam paper draws its
#     rotated margin, character by character, twice, with the whole page between): poppler
#     keeps it once wherever the copy comes; we kept copies only within the last 8 spans.
def drawn_twice():
    margin = "".join("q 0 1 -1 0 40 %d cm BT /F1 12 Tf 0 0 Td (%s) Tj ET Q\n" % (300 + 40 * i, c)
                     for i, c in enumerate("SEAL"))
    body = "".join("BT /F1 12 Tf 100 %d Td (line %d of the answer sheet) Tj ET\n" % (700 - 20 * i, i)
                   for i in range(12))
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> >>"),
        stream(margin + body + margin, compress=True),
        HELV,
    ]
    text = "\n".join("line %d of the answer sheet" % i for i in range(12))
    write("drawn-twice", objs, text + "\nS\nE\nA\nL")



# 26. Optional content (layers) that is off in the default configuration (a Lecturer/Beamer
#     slide's later steps, a CAD drawing's hidden layers): viewers and pdftotext show none of
#     it; we read it all. Sections marked `/OC` with an OCG that is off, a form whose own /OC
#     is off, an OCMD (AllOff of a hidden group: shown) and nested marked content; and notes
#     (annotations) of the hidden layer or flagged NoView, which are not shown either.
def optional_content():
    content = ("BT /F1 12 Tf 72 720 Td (the first step shows) Tj ET\n"
               "/OC /Off BDC BT /F1 12 Tf 72 700 Td (the second step waits) Tj ET EMC\n"
               "/Span << /Lang (en) >> BDC /OC /On BDC "
               "BT /F1 12 Tf 72 680 Td (a layer that is on) Tj ET EMC EMC\n"
               "/OC /Off BDC /Span << >> BDC BT /F1 12 Tf 72 660 Td (nested and hidden) Tj ET "
               "EMC EMC\n"
               "/OC /AllOff BDC BT /F1 12 Tf 72 640 Td (shown while the hidden group is off) Tj "
               "ET EMC\n"
               "/OC /Off BDC q 1 0 0 1 0 -40 cm /Fm Do Q EMC\n"
               "/Fx Do\n"
               "BT /F1 12 Tf 72 600 Td (the last line) Tj ET\n")
    objs = [
        "<< /Type /Catalog /Pages 2 0 R /OCProperties << /OCGs [6 0 R 7 0 R] "
        "/D << /BaseState /OFF /ON [6 0 R] >> >> >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page_objs("4 0 R", "<< /Font << /F1 5 0 R >> /XObject << /Fm 9 0 R /Fx 10 0 R >> "
                  "/Properties << /On 6 0 R /Off 7 0 R /AllOff 8 0 R >> >>",
                  "/Annots [11 0 R 12 0 R 13 0 R]"),
        stream(content, compress=True),
        HELV,
        "<< /Type /OCG /Name (Step 1) >>",
        "<< /Type /OCG /Name (Step 2) >>",
        "<< /Type /OCMD /OCGs [7 0 R] /P /AllOff >>",
        stream("BT /F1 12 Tf 72 620 Td (a form in a hidden section) Tj ET",
               "/Type /XObject /Subtype /Form /BBox [0 0 612 792] "
               "/Resources << /Font << /F1 5 0 R >> >>"),
        stream("BT /F1 12 Tf 72 580 Td (a form of a hidden layer) Tj ET",
               "/Type /XObject /Subtype /Form /BBox [0 0 612 792] /OC 7 0 R "
               "/Resources << /Font << /F1 5 0 R >> >>"),
    ]
    # Notes: one shown, one of the hidden layer, one NoView (flag 32: printed, not shown).
    for i, extra in enumerate(["", "/OC 7 0 R", "/F 32"]):
        objs.append("<< /Type /Annot /Subtype /FreeText /Rect [72 %d 300 %d] /AP << /N %d 0 R >> "
                    "/DA (/Helv 12 Tf 0 g) %s >>" % (500 - 30 * i, 520 - 30 * i, 14 + i, extra))
    for text in ["a note that shows", "a note of the hidden layer", "a note for print only"]:
        objs.append(stream("BT /F1 12 Tf 2 5 Td (%s) Tj ET" % text,
                           "/Type /XObject /Subtype /Form /BBox [0 0 228 20] "
                           "/Resources << /Font << /F1 5 0 R >> >>"))
    write("optional-content", objs, "the first step shows\na layer that is on\n"
          "shown while the hidden group is off\nthe last line\na note that shows")


# 27. Text drawn off the page (past the MediaBox: a slug, a title moved out of sight, a page
#     cropped from a larger one): poppler's `addChar` drops a glyph whose origin and advance
#     lie outside the page (so a line running past the edge is cut at the edge, as it shows);
#     we used to read it. The MediaBox is inherited from the page tree and does
#     not start at 0 0.
def off_page():
    content = ("BT /F1 12 Tf 72 720 Td (on the page) Tj ET\n"
               "BT /F1 12 Tf 700 720 Td (right of the page) Tj ET\n"
               "BT /F1 12 Tf 72 -60 Td (below the page) Tj ET\n"
               "BT /F1 12 Tf -300 700 Td (left of the page) Tj ET\n"
               "BT /F1 12 Tf 72 900 Td (above the page) Tj ET\n"
               "BT /F1 12 Tf 550 680 Td (at the edge) Tj ( and beyond it) Tj ET\n"
               "q 0 1 -1 0 20 300 cm BT /F1 10 Tf 0 0 Td (a margin stamp) Tj ET Q\n")
    # Page 2's MediaBox misses all of its text: the box is wrong, not the text, and a file
    # with a text layer should not read as empty (pdftotext reads nothing there), so such a
    # page is read whole.
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 /MediaBox [0 10 612 792] >>",
        "<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        stream(content, compress=True),
        HELV,
        "<< /Type /Page /Parent 2 0 R /Contents 7 0 R /MediaBox [0 0 100 100] "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        stream("BT /F1 12 Tf 72 720 Td (a page whose box misses its text) Tj ET"),
    ]
    write("off-page", objs, "on the page\nat the edge\na margin stamp\n"
          "a page whose box misses its text")



# 28. A letter mirrored left to right (XeTeX's logo: its E reversed by `-1 0 0 1 cm` and
#     lowered): poppler keeps it in its line (only text whose advance and up are both reversed
#     is turned by 180°); we took it for upside-down text and read it after the page, so the
#     logo read `X TeX` and a stray `E`. Text turned by 180° stays apart.
def mirrored():
    content = ("BT /F1 12 Tf 72 700 Td (X) Tj ET\n"
               "q -1 0 0 1 160 0 cm BT /F1 12 Tf 72 697 Td (E) Tj ET Q\n"
               "BT /F1 12 Tf 88 700 Td (TeX is a TeX engine) Tj ET\n"
               "q -1 0 0 -1 400 900 cm BT /F1 12 Tf 72 500 Td (upside down) Tj ET Q\n")
    objs = helvetica_page(content)
    write("mirrored", objs, "XETeX is a TeX engine\nupside down")


# 29. A font sample's letters each set apart by a space glyph (SIL's character lists: cairo,
#     Word): every fragment of the line is one letter, so poppler's letter-spacing rule
#     (`TextLine::coalesce`) prints a space only where a gap reaches 1.3 times the line's
#     narrowest one; a space glyph alone does not make one (`Ʋ ʋ ᶹ` reads `Ʋʋᶹ`). A line with a
#     longer word keeps its spaces.
def space_glyph_samples():
    content = ("BT /F1 12 Tf 72 700 Td (A B C  D E F) Tj ET\n"
               "BT /F1 12 Tf 72 680 Td (a b c d) Tj ET\n"
               "BT /F1 12 Tf 72 660 Td (Sample a b c) Tj ET\n")
    objs = helvetica_page(content)
    write("space-glyph-samples", objs, "ABC DEF\nabcd\nSample a b c")


# 30. Right-to-left words drawn in logical order by one TJ (LuaTeX, texnegar's Persian): the
#     first letter at the right, each next one placed left of it by a TJ offset and kerned a
#     hair (0.01 em) into it; narrow letters (alef, beh) and the kashida's tatweels, two side
#     by side. We appended a glyph drawn back to the left of the last one to its span as if
#     it followed it (`تبای` for `تابی`), and took two tatweels 0.2 em apart for one drawn
#     twice. Read as poppler reads them: by x, then put back in logical order.
def rtl_logical_kerned():
    lines = ["تابی چاپی", "تلاشهــایی کتابهایی"]
    codes, pairs = coded("".join(lines).replace(" ", ""))
    table = dict((ch, c) for c, ch in pairs)
    narrow = {"ا": 200, "ب": 250, "پ": 250, "ـ": 200}
    width = lambda ch: narrow.get(ch, 500)
    widths = " ".join("%d [%d]" % (c, width(ch)) for c, ch in pairs)
    content = "BT /F1 40 Tf\n"
    for y, line in ((700, lines[0]), (640, lines[1])):
        glyphs = line.replace(" ", "")
        starts = [i for i, ch in enumerate(line) if ch == " "]
        # A word space: the pen moves a further 0.3 em.
        spaced = set(i - n for n, i in enumerate(starts))
        tj = ""
        for i, ch in enumerate(glyphs):
            tj += hex2([table[ch]])
            if i + 1 < len(glyphs):
                move = width(ch) + width(glyphs[i + 1]) - 10
                tj += " %d " % (move + (300 if i + 1 in spaced else 0))
        content += "1 0 0 1 %.1f %d Tm [%s] TJ\n" % (500 - width(glyphs[0]) * 0.04, y, tj)
    content += "ET\n"
    objs = identity_h_page(content, "XKayhan", "/CIDFontType2 /DW 500 /W [%s]" % widths, pairs)
    write("rtl-logical-kerned", objs, "\n".join(lines))


indirect_filter()
identity_name()
cmaps()
predefined()
rtl()
symbol_tex()
acroform()
glyph_positioned()
cjk_collection_identity()
cff_builtin()
type3_numeric_names()
vertical()
tex_accents()
truetype_cmap_aliases()
space_backed_out()
endstream_same_line()
wide_cmap_codes()
bad_content_tokens()
acroform_fields()
glyph_name_suffixes()
cff_unicode_names()
rtl_embedded_runs()
ocr_letter_spaced()
off_baseline()
drawn_twice()
optional_content()
off_page()
mirrored()
space_glyph_samples()
rtl_logical_kerned()
print("wrote", OUT)
