"""The course's citations of vLLM hold at the release it names (``labkit/course/vllm_pin.py``).

The first tests check the checker on small texts, against a small made-up release; the last one,
a maintainer check, runs it on every tracked file of the course against the committed index.
"""

from __future__ import annotations

import gzip

import pytest

from labkit.course import vllm_pin
from labkit.course.vllm_pin import RELEASE, Release, citations

URL = f"https://github.com/vllm-project/vllm/blob/{RELEASE}"
TOY = Release(
    files={
        "vllm/v1/core/block_pool.py": frozenset({"BlockPool", "BlockPool.get_new_blocks", "BlockPool.touch"}),
        "vllm/v1/request.py": frozenset({"Request", "Request.num_tokens"}),
        "csrc/attention/paged_attention_v2.cu": frozenset({"paged_attention_v2"}),
    },
    folders=frozenset({"vllm", "vllm/v1", "vllm/v1/core", "csrc", "csrc/attention"}),
)


def problems(text: str, file: str = "lab/README.md") -> list[str]:
    return [f"{c.kind} {c.text}" for c in citations(text, file, TOY) if c.problem]


def held(text: str, file: str = "lab/README.md") -> list[str]:
    return [f"{c.kind} {c.text}" for c in citations(text, file, TOY) if not c.problem]


def test_a_link_must_name_the_release_and_an_existing_path():
    """Pins the three verdicts on a link: the release's tag and a path of the index hold; another
    tag fails, and so does a path the release does not have, a folder with ``tree`` holds."""
    assert held(f"[`block_pool.py`]({URL}/vllm/v1/core/block_pool.py)") == [
        f"link {RELEASE}/vllm/v1/core/block_pool.py"]
    assert held(f"[`vllm/v1/request.py`]({URL}/vllm/v1/request.py)") == [
        f"link {RELEASE}/vllm/v1/request.py", "path vllm/v1/request.py"]  # the link's text is a path too
    assert problems("see https://github.com/vllm-project/vllm/blob/v0.10.1/vllm/v1/core/block_pool.py.") == [
        "link v0.10.1/vllm/v1/core/block_pool.py", "release v0.10.1"]
    assert problems(f"[x]({URL}/vllm/attention/selector.py)") == [f"link {RELEASE}/vllm/attention/selector.py"]
    tree = f"https://github.com/vllm-project/vllm/tree/{RELEASE}/csrc/attention"
    assert held(f"the kernels ([`csrc/attention/`]({tree}))") == [f"link {RELEASE}/csrc/attention",
                                                                  "path csrc/attention/"]


def test_a_bare_path_must_exist():
    """Pins that a ``vllm/`` or ``csrc/`` path outside a link is checked, with its trailing
    punctuation dropped, and that a path inside a longer path (``site/vllm/x``) is not one."""
    assert held("in `vllm/v1/request.py`, and csrc/attention/.") == ["path vllm/v1/request.py", "path csrc/attention/"]
    assert problems("``vllm/attention/ops/paged_attn.py``: the decode op") == ["path vllm/attention/ops/paged_attn.py"]
    assert held("/tmp/vllm/cache and my-vllm/x") == []


def test_a_named_definition_must_be_in_its_file():
    """Pins both forms of a definition named with its file, ``Class.method`` checked as written
    and a bare name at any level, and that an expression in backquotes is not taken for a name."""
    text = f"`BlockPool.get_new_blocks` in [`vllm/v1/core/block_pool.py`]({URL}/vllm/v1/core/block_pool.py)"
    assert "name vllm/v1/core/block_pool.py: BlockPool.get_new_blocks" in held(text)
    assert problems("`BlockPool.free_blocks` in `vllm/v1/core/block_pool.py`.") == [
        "name vllm/v1/core/block_pool.py: BlockPool.free_blocks"]
    assert problems("`Request.touch` in `vllm/v1/core/block_pool.py`.") == [
        "name vllm/v1/core/block_pool.py: Request.touch"]
    listed = "`vllm/v1/core/block_pool.py`: `touch`, `get_new_blocks()` and `evict` | `n + 1`"
    assert problems(listed) == ["name vllm/v1/core/block_pool.py: evict"]
    assert "name vllm/v1/core/block_pool.py: touch" in held(listed)
    assert problems("`min(a, b)` in `vllm/v1/request.py`, `paged_attention_v2` of "
                    "csrc/attention/paged_attention_v2.cu") == []


def test_other_releases_only_in_notes():
    """Pins that a release number other than the pin fails outside a note, and that a note (a
    paragraph, list item or table row starting with its mark) exempts everything in it, and only it."""
    assert problems("This changed in v0.11.0.") == ["release v0.11.0"]
    assert problems(f"Read at {RELEASE}.") == []
    note = ("**Since then** (v0.29.0): the runner moved to\n`vllm/v1/worker/gpu/model_runner.py`.\n\n"
            "Back at the pin, v0.10.1 is wrong.")
    assert problems(note) == ["release v0.10.1"]
    assert problems("- **History**: v0.10.1 had `vllm/attention/selector.py`.\n- and v0.10.2 too") == [
        "release v0.10.2"]
    table = "| a | b |\n|---|---|\n| x | **Since then**: v0.29.0 |\n| y | v0.29.0 |"
    assert problems(table) == ["release v0.29.0"]
    python = '    # History: v0.10.1 picked FLASH_ATTN here,\n    # then failed.\n    x = 1  # v0.11.0\n'
    assert problems(python, "lab/solution.py") == ["release v0.11.0"]
    docstring = '"""The rule.\n\nHistory: in v0.10.1 the\nengine refused it.\n\nNow v0.12.0."""'
    assert problems(docstring, "lab/solution.py") == ["release v0.12.0"]


def test_the_index_lists_definitions():
    """Pins what the index records of a Python file: classes, methods, nested classes, attributes
    of classes and modules (enum members), attributes a method sets on self, definitions under
    ``if``; and that it reads them back."""
    source = (
        "import enum\nX = 1\nclass Mode(enum.Enum):\n    FULL = 1\n    class Inner:\n        pass\n"
        "    def f(self):\n        self.seen = 0\n        other.y = 1\nif True:\n    def g():\n        pass\n"
    )
    assert vllm_pin._python_definitions(source) == {"X", "Mode", "Mode.FULL", "Mode.Inner", "Mode.f", "Mode.seen",
                                                    "g"}
    assert {"paged_attention_v2_kernel", "block_sum", "Vec"} <= vllm_pin._c_definitions(
        "template <typename T>\n__global__ void paged_attention_v2_kernel(\n  T* out) {}\n"
        "inline __device__ float block_sum(float* red_smem, float sum) {}\nstruct Vec {};\n")


@pytest.mark.maintainer
def test_the_index_is_the_release_of_the_course():
    """Pins that the committed index was built from the release the course names."""
    header = gzip.decompress(vllm_pin.INDEX.read_bytes()).decode().split("\n", 1)[0]
    assert f"vLLM {RELEASE} ({vllm_pin.COMMIT})" in header, header
    release = Release.load()
    assert release.has_path("vllm/v1/core/block_pool.py") and release.defines(
        "vllm/v1/core/block_pool.py", "BlockPool.get_new_blocks")


@pytest.mark.maintainer
def test_every_vllm_citation_of_the_course_holds_at_the_release():
    """Every link, path, named definition and release number of every tracked file of the course
    holds at ``RELEASE`` (outside notes about other releases). A failure names the file, the line
    and what does not hold there."""
    found = vllm_pin.check_course()
    bad = [str(c) for c in found if c.problem]
    assert not bad, (f"{len(bad)} vLLM citations do not hold at {RELEASE} (python -m labkit.course.vllm_pin "
                     "check lists them; CONTRIBUTING.md, 'Citing vLLM'):\n" + "\n".join(bad))
    assert len(found) > 200, f"only {len(found)} citations found: is the scanner reading the course?"
