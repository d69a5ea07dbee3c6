// Send a curator's decision to the API the page was served with, then show the new state.
"use strict";

const curatorField = () => document.getElementById("curator");

function curator() {
  const field = curatorField();
  const value = field ? field.value.trim() : "";
  return value ? { curator: value } : {};
}

function edits(draft) {
  const changed = {};
  for (const box of draft.querySelectorAll("textarea[name]")) {
    if (box.value !== box.dataset.current) changed[box.name] = box.value;
  }
  return changed;
}

async function decide(draft, action, body) {
  const result = draft.querySelector(".result");
  const buttons = draft.querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  result.className = "result";
  result.textContent = action === "approve" ? "Approving…" : "Rejecting…";
  const url = `/api/agents/${encodeURIComponent(draft.dataset.agent)}/queue/${encodeURIComponent(draft.dataset.item)}/${action}`;
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ ...body, ...curator() }),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(answer.message || answer.error || response.statusText);
    // With several curators a move is a review, and the last one may make a dispute.
    const said = { approve: "approved", reject: "rejected", review: "reviewed", dispute: "disputed" };
    const events = answer.events || [];
    const event = [action, "dispute", "review"]
      .map((kind) => events.find((e) => e.event === kind))
      .find(Boolean) || {};
    const done = said[event.event] || said[action];
    result.className = "result done";
    result.textContent = event.summary ? `${done}: ${event.summary}` : done;
    setTimeout(() => window.location.reload(), 600);
  } catch (error) {
    result.className = "result failed";
    result.textContent = `Not done: ${error.message}`;
    buttons.forEach((b) => { b.disabled = false; });
  }
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button.approve, button.approve-version, button.reject");
  if (!button) return;
  const draft = button.closest("article.draft");
  if (button.classList.contains("approve")) {
    decide(draft, "approve", { edits: edits(draft) });
    return;
  }
  if (button.classList.contains("approve-version")) {
    // A disputed draft settled with one curator's version: its edits, as that curator made them.
    decide(draft, "approve", { edits: JSON.parse(button.dataset.edits) });
    return;
  }
  const note = draft.querySelector(".note textarea");
  if (!note.value.trim()) {
    const result = draft.querySelector(".result");
    result.className = "result failed";
    result.textContent = "Write a note for the agent first: it says what to avoid next time.";
    note.focus();
    return;
  }
  decide(draft, "reject", { notes: note.value });
});

// A draft's field as tall as its text, in whole lines, where the browser does not size fields
// to their content itself (panel.css: field-sizing); its max-height still caps it at ten lines.
function fitField(box) {
  const style = getComputedStyle(box);
  const border = parseFloat(style.borderTopWidth) + parseFloat(style.borderBottomWidth);
  box.style.height = "0"; // then scrollHeight is the text's height, not the rows' it had
  box.style.height = `${box.scrollHeight + border}px`;
}

function fitFields() {
  document.querySelectorAll("table.fields textarea").forEach(fitField);
}

if (!CSS.supports("field-sizing", "content")) {
  document.addEventListener("DOMContentLoaded", fitFields);
  window.addEventListener("resize", fitFields);
  document.addEventListener("input", (event) => {
    if (event.target.matches("table.fields textarea")) fitField(event.target);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const field = curatorField();
  if (!field) return;
  field.value = localStorage.getItem("feedbackd.curator") || "";
  field.addEventListener("change", () => localStorage.setItem("feedbackd.curator", field.value.trim()));
});
