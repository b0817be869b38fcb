"""The HTML page of a recorded run: everything escaped, reasoning folded, nothing fetched."""

from __future__ import annotations

from frognano.agent.trajectory_html import render_html

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
