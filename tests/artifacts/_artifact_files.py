"""Real files of each format, made with the same libraries that read them (tests only).

Also run by the stand-in agent CLIs of the harness tests (they put this folder on
``sys.path``), so an agent "writes" a real spreadsheet, document, deck or PDF.
The PDF is written by hand (reportlab is not installed): a minimal valid file with one
Helvetica text line per page, its cross-reference table computed from the real offsets.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def make_xlsx(path: Path, total: str | int = "=SUM(B2:B9)") -> Path:
    """A sales sheet: a header, eight rows, and a total row whose B10 is ``total``; a second sheet."""
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["Region", "Amount"])
    for i in range(8):
        ws.append([f"R{i + 1}", (i + 1) * 10])
    ws.append(["Total", total])
    wb.create_sheet("Notes")["A1"] = "made by the agent"
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path


def make_docx(path: Path, total: str | int = "=SUM(B2:B9)") -> Path:
    """A report with a heading, a paragraph and a 3x2 table whose last cell is ``total``."""
    import docx

    d = docx.Document()
    d.add_heading("Quarterly report", level=1)
    d.add_paragraph("Figures by region follow.")
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Region", "Amount"), ("North", "120"), ("Total", str(total))]):
        table.cell(r, 0).text, table.cell(r, 1).text = a, b
    path.parent.mkdir(parents=True, exist_ok=True)
    d.save(path)
    return path


def make_pptx(path: Path, title: str = "Results", notes: str = "say the total twice") -> Path:
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = title
    slide.placeholders[1].text = "Total: =SUM(B2:B9)"
    slide.notes_slide.notes_text_frame.text = notes
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(path)
    return path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf_bytes(pages: list[str], *, claimed: int | None = None) -> bytes:
    """A PDF with one text line per page; ``claimed`` overrides the page count it declares."""
    n = len(pages)
    objs: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for text in pages:
        stream = f"BT /F1 12 Tf 72 720 Td ({_escape(text)}) Tj ET".encode("latin-1")
        objs.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        content = len(objs)
        objs.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            b"/Contents %d 0 R >>" % content
        )
        kids.append(b"%d 0 R" % len(objs))
    objs[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), claimed if claimed is not None else n)
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (i, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return out.getvalue()


def many_pages_pdf(n: int, text: str = "same page") -> bytes:
    """A real PDF of ``n`` pages sharing one content stream (100,000 pages in about 14 MB)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({_escape(text)}) Tj ET".encode("latin-1")
    head = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (5 + i) for i in range(n)), n),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents 4 0 R >>"
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate([*head, *([page] * n)], 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (i, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(offsets) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % off for off in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(offsets) + 1, xref))
    return out.getvalue()


def make_pdf(path: Path, pages: list[str], *, claimed: int | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pdf_bytes(pages, claimed=claimed))
    return path


def zip_bomb(path: Path, inflated_mb: int = 200) -> Path:
    """A zip named like a spreadsheet whose one member inflates to ``inflated_mb`` MB of zeros
    (about 200 KB on disk for 200 MB)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    block = b"\0" * (1 << 20)
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as member,
    ):
        for _ in range(inflated_mb):
            member.write(block)
    return path


def with_cached_value(path: Path, cell: str, formula: str, value: str) -> Path:
    """Rewrite a saved workbook as Excel would after computing ``cell``: the formula keeps its
    text and gains a cached value (openpyxl itself never computes one)."""
    src = path.read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                old = f'<c r="{cell}"><f>{formula}</f><v></v></c>'.encode()
                assert old in data, "openpyxl wrote the formula cell differently"
                data = data.replace(old, f'<c r="{cell}"><f>{formula}</f><v>{value}</v></c>'.encode())
            zout.writestr(item, data)
    path.write_bytes(out.getvalue())
    return path
