"""One reader per format: a file's bytes to the text a grader reads.

Each function takes the file's bytes (already size-checked) and the budgets, and returns
text that says what it cut ("… truncated: 37 more pages"). They use the well-kept readers
of each format and never evaluate anything: openpyxl gives a formula as written
(``=SUM(B2:B9)``) and separately the value the saving application cached, if any; macros
are never read. They may raise on a malformed file: the worker turns that into one line.
They run in the worker process (:mod:`~upskill_hub.artifacts.worker`), under its time and
memory limits.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from upskill_hub.artifacts.zipcheck import check_zip

Limits = Mapping[str, Any]


class Lines:
    """Collects output lines up to a character budget; remembers how much it dropped."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.lines: list[str] = []
        self.used = 0
        self.dropped_chars = 0

    @property
    def full(self) -> bool:
        return self.used >= self.max_chars

    def add(self, line: str) -> None:
        if self.full:
            self.dropped_chars += len(line) + 1
            return
        room = self.max_chars - self.used
        if len(line) + 1 > room:
            self.lines.append(line[:room])
            self.dropped_chars += len(line) + 1 - room
            self.used = self.max_chars
            return
        self.lines.append(line)
        self.used += len(line) + 1

    def text(self, *notes: str) -> str:
        out = list(self.lines)
        if self.dropped_chars:
            out.append(f"… truncated: {self.dropped_chars} more characters")
        out.extend(n for n in notes if n)
        return "\n".join(out)


def _zip_ok(data: bytes, lim: Limits) -> None:
    check_zip(data, max_total=lim["max_zip_bytes"], max_ratio=lim["max_zip_ratio"],
              max_members=lim["max_zip_members"])  # fmt: skip


def _cell_value(v: Any) -> str:
    text = getattr(v, "text", None)  # ArrayFormula / DataTableFormula
    if text is not None:
        return f"{{{text}}}"
    return str(v)


def _cells(ws: Any) -> Iterator[tuple[str, Any, bool]]:
    """``(coordinate, value, is_formula)`` of a read-only sheet's non-empty cells, row by row
    (nothing for a chart sheet, which has no cells)."""
    if not hasattr(ws, "iter_rows"):
        return
    ws.reset_dimensions()  # the sheet's own claim (A1:XFD1048576) must not pad rows
    for row in ws.iter_rows():
        for cell in row:
            value = getattr(cell, "value", None)
            if value is not None and value != "":
                yield cell.coordinate, value, getattr(cell, "data_type", None) == "f"


def render_xlsx(data: bytes, lim: Limits) -> str:
    """Every sheet: each non-empty cell as ``A1: value``; a formula with its cached value."""
    _zip_ok(data, lim)
    from openpyxl import load_workbook

    out = Lines(lim["max_file_chars"])
    formulas_wb = load_workbook(io.BytesIO(data), read_only=True, data_only=False, keep_vba=False, keep_links=False)
    names = list(formulas_wb.sheetnames)
    cells_left = lim["max_cells"]
    notes: list[str] = []
    per_sheet: list[tuple[str, list[tuple[str, Any]]]] = []
    formula_cells: set[tuple[str, str]] = set()
    for name in names[: lim["max_sheets"]]:
        got: list[tuple[str, Any]] = []
        for coord, value, is_formula in _cells(formulas_wb[name]):
            if cells_left <= 0:
                notes.append(f"… truncated: cells from {name}!{coord} on not read (limit {lim['max_cells']} cells)")
                break
            got.append((coord, value))
            cells_left -= 1
            if is_formula:
                formula_cells.add((name, coord))
        per_sheet.append((name, got))
        if cells_left <= 0 and notes:
            break
    formulas_wb.close()
    cached: dict[tuple[str, str], Any] = {}
    if formula_cells:
        values_wb = load_workbook(io.BytesIO(data), read_only=True, data_only=True, keep_vba=False, keep_links=False)
        for name in {n for n, _ in formula_cells}:
            wanted = {c for n, c in formula_cells if n == name}
            for coord, value, _ in _cells(values_wb[name]):
                if coord in wanted:
                    cached[(name, coord)] = value
                    wanted.discard(coord)
                    if not wanted:
                        break
        values_wb.close()
    for name, got in per_sheet:
        out.add(f"## sheet {name!r}")
        if not got:
            out.add("(empty)")
        for coord, value in got:
            if (name, coord) in formula_cells:
                line = f"{coord}: {_cell_value(value)}"
                if (name, coord) in cached:
                    line += f" (cached value: {cached[(name, coord)]})"
                else:
                    line += " (no cached value)"
            else:
                line = f"{coord}: {_cell_value(value)}"
            out.add(line)
    if len(names) > lim["max_sheets"]:
        notes.append(f"… truncated: {len(names) - lim['max_sheets']} more sheets")
    return out.text(*notes)


def _table_lines(table: Any, out: Lines) -> None:
    for row in table.rows:
        if out.full:
            out.add("|")  # counted as dropped
            continue
        out.add("| " + " | ".join(" ".join(c.text.split()) for c in row.cells) + " |")


def render_docx(data: bytes, lim: Limits) -> str:
    """Paragraphs and tables in document order (tables as ``| a | b |`` rows)."""
    _zip_ok(data, lim)
    import docx
    from docx.table import Table

    out = Lines(lim["max_file_chars"])
    document = docx.Document(io.BytesIO(data))
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            out.add("[table]")
            _table_lines(block, out)
        elif block.text.strip():
            style = getattr(getattr(block, "style", None), "name", "") or ""
            prefix = f"[{style}] " if style.lower().startswith(("heading", "title")) else ""
            out.add(prefix + block.text)
    return out.text()


def _shape_texts(shapes: Any, out: Lines, depth: int = 0) -> None:
    for shape in shapes:
        if out.full:
            return
        if depth < 4 and getattr(shape, "shape_type", None) == 6:  # MSO_SHAPE_TYPE.GROUP
            _shape_texts(shape.shapes, out, depth + 1)
        elif getattr(shape, "has_table", False):
            out.add("[table]")
            _table_lines(shape.table, out)
        elif getattr(shape, "has_text_frame", False) and shape.text_frame.text.strip():
            out.add(shape.text_frame.text)


def render_pptx(data: bytes, lim: Limits) -> str:
    """Each slide's texts (text frames, tables, groups) and its speaker notes."""
    _zip_ok(data, lim)
    from pptx import Presentation

    out = Lines(lim["max_file_chars"])
    deck = Presentation(io.BytesIO(data))
    slides = list(deck.slides)
    for i, slide in enumerate(slides[: lim["max_slides"]], 1):
        out.add(f"## slide {i}")
        _shape_texts(slide.shapes, out)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                out.add("[notes] " + notes.text)
    more = len(slides) - lim["max_slides"]
    return out.text(f"… truncated: {more} more slides" if more > 0 else "")


def _pages(reader: Any, limit: int) -> Iterator[Any]:
    """The first ``limit`` pages, walking the page tree lazily (pypdf's ``reader.pages``
    flattens the whole tree first: 100,000 pages cost seconds before the first one)."""
    from pypdf._page import PageObject
    from pypdf.generic import IndirectObject, NameObject

    inherit = ("/Resources", "/MediaBox", "/CropBox", "/Rotate")
    root = reader.trailer["/Root"].get_object()["/Pages"]
    stack: list[tuple[Any, dict[str, Any]]] = [(root, {})]
    seen: set[Any] = set()
    visits = 0
    while stack and limit > 0:
        ref, inherited = stack.pop()
        visits += 1
        if visits > 50 * limit + 1000:
            return
        node = ref.get_object()
        ident = (ref.idnum, ref.generation) if isinstance(ref, IndirectObject) else id(node)
        if ident in seen:
            continue  # a loop in the page tree
        seen.add(ident)
        kind = node.get("/Type")
        if kind == "/Pages" or ("/Kids" in node and kind != "/Page"):
            here = dict(inherited)
            for key in inherit:
                if key in node:
                    here[key] = node[key]
            kids = node.get("/Kids")
            kids = kids.get_object() if kids is not None else []
            for kid in reversed(list(kids)[: 50 * limit]):
                stack.append((kid, here))
            continue
        page = PageObject(reader, ref if isinstance(ref, IndirectObject) else None)
        page.update(node)
        for key, value in inherited.items():
            if key not in page:
                page[NameObject(key)] = value
        limit -= 1
        yield page


def render_pdf(data: bytes, lim: Limits) -> str:
    """Text per page, for the first pages; says how many pages the file claims."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data), strict=False)
    if reader.is_encrypted:
        try:
            if not reader.decrypt(""):
                return "encrypted PDF: not read (it needs a password)"
        except Exception as exc:  # noqa: BLE001 - any failure of an optional step is a note
            return f"encrypted PDF: not read ({type(exc).__name__})"
    try:
        claimed = int(reader.trailer["/Root"].get_object()["/Pages"].get_object().get("/Count", 0))
    except Exception:  # noqa: BLE001
        claimed = 0
    out = Lines(lim["max_file_chars"])
    out.add(f"PDF, {claimed} pages declared")
    read = 0
    for page in _pages(reader, lim["max_pages"]):
        if out.full:
            break
        read += 1
        out.add(f"## page {read}")
        try:
            text = page.extract_text() or ""
        except Exception as exc:  # noqa: BLE001 - one bad page is a note, the rest still count
            text = f"(text not extracted: {type(exc).__name__})"
        out.add(text.strip() or "(no text)")
    more = max(claimed - read, 0)
    note = f"… truncated: {more} more pages (read {read} of {claimed} declared)" if more else ""
    return out.text(note)


def render_image(data: bytes, lim: Limits) -> str:
    """Format, pixel size and mode only: the header is read, the pixels never decoded."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:  # lazy: reads the header only
        return f"image: {im.format}, {im.size[0]}x{im.size[1]} pixels, mode {im.mode}"


RENDERERS: dict[str, Callable[[bytes, Limits], str]] = {
    "xlsx": render_xlsx,
    "docx": render_docx,
    "pptx": render_pptx,
    "pdf": render_pdf,
    "image": render_image,
}
