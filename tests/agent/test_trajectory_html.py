"""The HTML page of a recorded run: everything escaped, reasoning folded, nothing fetched."""

from __future__ import annotations

from frognano.agent.trajectory_html import render_html
from frognano.agent.trajectory_view import RunFiles
from tests.agent.test_trajectory import SERVER_RUN

EVENTS = [
    {"event": "run_start", "t": 0.0, "run_id": "r1", "model": "frognano", "task": "fix <b>"},
    {"event": "request", "t": 0.1, "step": 1},
    {"event": "assistant", "t": 1.0, "step": 1, "reasoning": "think </details><script>x</script>",
     "content": "", "finish_reason": "tool_calls", "usage": {"prompt_tokens": 10},
     "tool_calls": [{"id": "c1", "name": "Bash", "arguments": '{"command": "echo <hi>"}'}]},
    {"event": "tool", "t": 1.5, "step": 1, "name": "Bash", "is_error": True, "duration": 0.25,
     "result": "<script>alert(1)</script>"},
    {"event": "run_end", "t": 2.0, "stop_reason": "completed", "steps": 1, "summary": "done"},
    {"event": "verification", "t": 3.0, "verdict": "held"},
]  # fmt: skip


def test_every_text_is_escaped_and_the_page_stands_alone() -> None:
    page = render_html(EVENTS, source="/runs/<x>/trajectory.jsonl")
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "think &lt;/details&gt;&lt;script&gt;x&lt;/script&gt;" in page
    assert page.count("<details>") == 1  # the reasoning, folded; the task is open
    assert "&quot;command&quot;: &quot;echo &lt;hi&gt;&quot;" in page
    assert '<div class="step tool error">' in page
    assert "From <code>/runs/&lt;x&gt;/trajectory.jsonl</code>" in page
    assert "verification" in page  # an event kind the page has no layout for still shows
    assert "src=" not in page
    assert "href=" not in page


def test_the_page_names_the_model_and_shows_the_verdict_the_patch_and_edits_as_diffs() -> None:
    files = RunFiles(
        report={"outcome": {"patch_ready": False, "reason": "the gate found <b>"}},
        patch="diff --git a/x b/x\n--- a/x\n+++ b/x\n-old\n+new </pre><script>\n",
    )
    page = render_html(SERVER_RUN, source="t.jsonl", files=files)
    assert "<title>FrogNano run r1 with model frognano</title>" in page
    assert "<tr><th>model</th><td>frognano (the name asked for)</td></tr>" in page
    assert "<tr><th>identity</th><td>model_path /models/Qwen3.5, weight_version default" in page
    assert "<tr><th>sampling</th><td>temperature 0.6, top_p 0.95, top_k 20" in page
    assert '<td class="not-ready">no patch: the gate found &lt;b&gt;</td>' in page
    assert "prompt=900, cached=not reported, completion=20" in page
    assert "no token counts reported" in page
    assert (
        'calls <code>Edit</code></div><pre class="diff"><span class="file">--- /w/calc.py</span>\n'
        '<span class="file">+++ /w/calc.py</span>\n def f():\n'
        '<span class="del">-    return 1</span>\n<span class="add">+    return 2</span>\n</pre>'
    ) in page
    assert '<span class="add">+new &lt;/pre&gt;&lt;script&gt;</span>' in page
    assert "<script>" not in page
    assert "run_info" not in page  # shown as the facts, not as a JSON dump
