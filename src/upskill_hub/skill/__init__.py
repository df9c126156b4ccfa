"""The skill model: load, validate and write an Agent Skills folder.

A skill is a folder ``<name>/`` with ``SKILL.md`` (YAML frontmatter + Markdown body) and
optionally ``skill_meta.json`` (our metadata and test cases), ``references/``, ``scripts/``
and ``assets/``. The rules checked here are those of the Agent Skills spec as its reference
validator (``skills-ref``) reads them: names are NFKC-normalised Unicode letters, digits and
hyphens, a lowercase ``skill.md`` is accepted, and duplicate frontmatter keys are an error
(its strict YAML parser refuses them; PyYAML would silently keep the last). That validator
reads every value as a string; PyYAML types ``1.0`` as a float, so in lenient mode such
scalars are read back as the text that was written, with a warning to quote them. A skill's
*version* is a hash of its files' contents, so an eval result always names the exact bytes
it measured.

Validation never raises for a bad skill: it returns :class:`Problem` s, one per thing that
is wrong, each naming the file and the field, so the CLI can print one line per problem.

One module a job, each importing only those before it: :mod:`.frontmatter` (SKILL.md's
frontmatter), :mod:`.model` (the :class:`Skill` type) and :mod:`.loading` (a folder read).
"""

from upskill_hub.skill.frontmatter import (
    DESCRIPTION_MAX,
    SPEC_KEYS,
    FrontmatterError,
    name_problem,
    parse_frontmatter,
    render_skill_md,
    split_frontmatter,
)
from upskill_hub.skill.loading import (
    BOM_WARNING,
    WALK_SKIP_DIRS,
    find_skills,
    load_skill,
    repository_root,
    require_skill,
    scan_skill,
    skill_md_name,
    skills_in,
    walk_tree,
)
from upskill_hub.skill.model import (
    EVALS_FILE,
    IGNORED_NAMES,
    META_FILE,
    RESOURCE_DIRS,
    SKILL_FILE,
    LoadResult,
    Skill,
    estimate_tokens,
)

__all__ = [
    "BOM_WARNING", "DESCRIPTION_MAX", "EVALS_FILE", "IGNORED_NAMES", "META_FILE", "RESOURCE_DIRS", "SKILL_FILE",
    "SPEC_KEYS", "WALK_SKIP_DIRS", "FrontmatterError", "LoadResult", "Skill", "estimate_tokens", "find_skills",
    "load_skill", "name_problem", "parse_frontmatter", "render_skill_md", "repository_root", "require_skill",
    "scan_skill", "skill_md_name", "skills_in", "split_frontmatter", "walk_tree",
]
