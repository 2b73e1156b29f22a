// The Review page's verdict form, held in the browser: every key press changes the answers
// here at once (no Streamlit rerun per key), and one save sends the whole form to Python.
//
// The page mounts three kinds of parts of one form: "keys" (what is in focus, the key
// buttons), one "criterion" per criterion (its answers and note, inside the criterion's
// box) and "save". They share the form below, kept per form key ("response:nonce") at module
// level, so a part that Streamlit redraws or remounts finds the answers where they were.

const FORMS = new Map(); // form key -> form
let current = null; // the form key the keyboard acts on (the last "keys" part drawn)
let mounted = 0;
let lastUnmount = 0;
let submissions = 0;

function formFor(data) {
  let form = FORMS.get(data.form);
  if (!form) {
    const previous = current && FORMS.get(current);
    form = {
      key: data.form, criteria: data.criteria, answers: new Map(), focus: 0,
      pending: null, refused: 0, message: "", views: new Set(), send: null,
      savingAs: data.saving_as || null,
    };
    for (const c of data.criteria) {
      form.answers.set(c.id, { answer: c.initial ?? null, note: c.note ?? "" });
    }
    // "Save" keeps the reviewer where they were; another response starts at its top.
    if (previous && previous.key.split(":")[0] === data.form.split(":")[0]) {
      form.focus = Math.min(previous.focus, data.criteria.length - 1);
    }
    if (previous && previous.refused) form.message = refusedNote(previous.refused);
    FORMS.set(data.form, form);
  }
  return form;
}

function adopt(form, data) {
  // Keys typed before this drawing stay: a redraw of the same form never resets answers.
  form.criteria = data.criteria;
  form.blind = !!data.blind;
  form.answerLabel = data.answer_label || "Your verdict";
  form.acceptJudges = data.accept_judges !== false;
  if (form.pending && data.done === form.pending.id) {
    form.pending = null; // Python took the save (saved, refused or nothing to save)
    form.message = form.refused ? refusedNote(form.refused) : "";
  }
  // the keys part decides which form the keyboard acts on; any part until it is drawn
  if (current !== data.form && (data.part === "keys" || !FORMS.has(current))) {
    current = data.form;
    for (const key of [...FORMS.keys()]) {
      if (key !== current) FORMS.delete(key); // a new form replaces the old ones
    }
  }
}

function notify(form) {
  for (const render of form.views) render();
}

function focused(form) {
  return form.criteria[Math.min(Math.max(0, form.focus), form.criteria.length - 1)];
}

function labelOf(criterion, value) {
  const answer = criterion.answers.find((a) => a.value === value);
  return answer ? answer.label : value;
}

function refusedNote(count) {
  return `${count} ${count === 1 ? "key" : "keys"} pressed while saving ` +
    `${count === 1 ? "was" : "were"} not applied: give ${count === 1 ? "it" : "them"} again.`;
}

function refuse(form, what) {
  form.refused += 1;
  form.message = `Saving… ${what} was not applied (${form.refused} ` +
    `${form.refused === 1 ? "key" : "keys"} while saving): give it again once the form is back.`;
  notify(form);
}

function give(form, value) {
  const criterion = focused(form);
  if (!criterion) return;
  if (form.pending) { refuse(form, `“${labelOf(criterion, value)}”`); return; }
  form.answers.get(criterion.id).answer = value;
  const index = form.criteria.indexOf(criterion);
  form.focus = Math.min(index + 1, form.criteria.length - 1);
  const next = focused(form);
  form.message = `${labelOf(criterion, value)} → ${criterion.label}` +
    (next === criterion ? " (the last criterion)" : `; focus on ${next.label}`);
  notify(form);
  reveal(form);
}

function move(form, step) {
  if (form.pending) { refuse(form, step > 0 ? "“next criterion”" : "“previous criterion”"); return; }
  form.focus = Math.min(Math.max(0, form.focus + step), form.criteria.length - 1);
  form.message = `Focus on ${focused(form).label}`;
  notify(form);
  reveal(form);
}

function acceptJudges(form) {
  if (!form.acceptJudges) return; // nothing to accept on this form (pairs)
  if (form.pending) { refuse(form, "“accept the judges”"); return; }
  if (form.blind) {
    form.message = "Off in blind mode (it would show the judges).";
    notify(form);
    return;
  }
  let filled = 0;
  for (const c of form.criteria) {
    const mine = form.answers.get(c.id);
    if (c.agreed && !mine.answer) { mine.answer = c.agreed; filled += 1; }
  }
  form.message = filled
    ? `Filled ${filled} ${filled === 1 ? "criterion" : "criteria"} where the judges agree; ` +
      "check them and save."
    : "The judges agree on no criterion you left open.";
  notify(form);
}

function submit(form, advance) {
  if (form.pending) { refuse(form, "“save”"); return; }
  if (!form.send) return;
  submissions += 1;
  const id = `${form.key}#${submissions}#${Date.now()}`;
  const answers = form.criteria
    .map((c) => ({ criterion: c.id, ...form.answers.get(c.id) }))
    .filter((a) => a.answer);
  const payload = { id, form: form.key, advance, answers };
  form.pending = { id, advance, payload, tries: 1 };
  form.refused = 0;
  form.message = advance ? "Saving, then the next response…" : "Saving…";
  notify(form);
  form.send("submit", payload);
  setTimeout(() => resend(form, id), RESEND_MS);
}

// A save whose rerun was swallowed by another rerun (seen when the page reran at the same
// moment) would leave the form waiting for ever: it is sent again, with the same id, until
// Python says it took it (Python takes an id once).
const RESEND_MS = 3000;
function resend(form, id) {
  if (!form.pending || form.pending.id !== id || FORMS.get(form.key) !== form) return;
  if (form.pending.tries >= 10) {
    form.message = "Not saved: the server did not answer. Reload the page and save again.";
    notify(form);
    return;
  }
  form.pending.tries += 1;
  form.message = "Still saving… (sent again)";
  notify(form);
  form.send("submit", form.pending.payload);
  setTimeout(() => resend(form, id), RESEND_MS * form.pending.tries);
}

function reveal(form) {
  const criterion = focused(form);
  const host = document.querySelector(
    `[data-rw-form="${CSS.escape(form.key)}"][data-rw-criterion="${criterion.id}"]`);
  const box = host && (host.closest('[class*="st-key-review_crit_"]') || host);
  if (box) box.scrollIntoView({ block: "nearest" });
}

function editable(target) {
  if (!target || !(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target.tagName === "TEXTAREA" || target.tagName === "SELECT") return true;
  if (target.tagName !== "INPUT") return false;
  return !["radio", "checkbox", "button", "submit", "reset", "range"].includes(target.type);
}

function onKey(event) {
  const form = current && FORMS.get(current);
  if (!form || event.defaultPrevented || event.isComposing) return;
  if (mounted === 0 && Date.now() - lastUnmount > 1500) return; // the form left the page
  const target = event.target;
  const ours = target instanceof Element && !!target.closest("[data-rw-form]");
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    if (editable(target) && !ours) return; // another field's own Enter
    event.preventDefault();
    submit(form, true);
    return;
  }
  if (editable(target) || event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key.length === 1 ? event.key.toLowerCase() : "";
  if (event.shiftKey) {
    if (key === "a") { event.preventDefault(); acceptJudges(form); }
    return;
  }
  if (key === "j") { event.preventDefault(); move(form, 1); return; }
  if (key === "k") { event.preventDefault(); move(form, -1); return; }
  const criterion = focused(form);
  const answer = key && criterion && criterion.answers.find((a) => a.key === key);
  if (answer) { event.preventDefault(); give(form, answer.value); }
}

if (window.__rwVerdictKeys) document.removeEventListener("keydown", window.__rwVerdictKeys);
window.__rwVerdictKeys = onKey;
document.addEventListener("keydown", onKey);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function button(label, hint, onclick, extra = {}) {
  const b = el("button", { type: "button", class: "rw-button", onclick, ...extra }, label);
  if (hint) b.append(el("kbd", { class: "rw-kbd", "aria-hidden": "true", text: hint }));
  return b;
}

// -- parts ------------------------------------------------------------------------------------
function drawKeys(root, form) {
  const status = el("p", { class: "rw-status", role: "status", "aria-live": "polite" });
  const where = el("p", { class: "rw-where" });
  const answers = el("span", { class: "rw-answers" });
  const accept = button("Accept the judges where they agree", "Shift+A",
    () => acceptJudges(form), { "aria-keyshortcuts": "Shift+A" });
  const row = el("div", { class: "rw-row" }, answers,
    button("Next criterion", "J", () => move(form, 1), { "aria-keyshortcuts": "J" }),
    button("Previous criterion", "K", () => move(form, -1), { "aria-keyshortcuts": "K" }));
  if (form.acceptJudges) row.append(accept);
  root.append(where, row, status);
  let shownAnswers = "";
  return () => {
    const criterion = focused(form);
    if (!criterion) return;
    const index = form.criteria.indexOf(criterion);
    where.textContent = `In focus: ${index + 1} of ${form.criteria.length} · ${criterion.label}` +
      ` — ${criterion.answers.filter((a) => a.key).map((a) => a.key.toUpperCase())
        .join(" / ")} answer it`;
    const signature = criterion.answers.map((a) => a.value).join("|");
    if (signature !== shownAnswers) {
      shownAnswers = signature;
      answers.replaceChildren(...criterion.answers.map((a) => button(
        a.label, a.key.toUpperCase(), () => give(form, a.value), {
          ...(a.key ? { "aria-keyshortcuts": a.key.toUpperCase() } : {}),
          ...(a.na ? { "data-na": "true" } : {}),
          title: `${a.label}${a.na ? " (not applicable: scored as cannot assess)" : ""}` +
            " for the criterion in focus, then the next" })));
    }
    accept.disabled = form.blind;
    accept.title = form.blind ? "Off in blind mode (it would show the judges)."
      : "Fills the criteria you left open with the verdict every judge gave.";
    status.textContent = form.message;
  };
}

function drawCriterion(root, form, criterionId) {
  const name = `rw-${form.key}-${criterionId}`;
  const label = form.answerLabel || "Your verdict";
  const group = el("div", { class: "rw-choices", role: "radiogroup", "aria-label": label });
  const badge = el("span", { class: "rw-badge", text: "In focus" });
  const note = el("input", {
    type: "text", class: "rw-note", placeholder: "why", "aria-label": "Note (optional)",
    oninput: (e) => { form.answers.get(criterionId).note = e.target.value; },
  });
  const noteLabel = el("label", { class: "rw-label" }, "Note (optional)", note);
  root.append(el("div", { class: "rw-head" }, el("span", { class: "rw-label", text: label }), badge),
    group, noteLabel);
  let shown = "";
  return () => {
    const criterion = form.criteria.find((c) => c.id === criterionId);
    if (!criterion) return;
    const mine = form.answers.get(criterionId);
    const signature = criterion.answers.map((a) => a.value).join("|");
    if (signature !== shown) {
      shown = signature;
      group.replaceChildren(...criterion.answers.map((a) => {
        const input = el("input", {
          type: "radio", name, value: a.value,
          onchange: () => {
            if (form.pending) { refuse(form, `“${a.label}”`); return; }
            mine.answer = a.value;
            form.focus = form.criteria.indexOf(criterion);
            form.message = `${a.label} → ${criterion.label}`;
            notify(form);
          },
        });
        const label = el("label", { class: "rw-choice" }, input, a.label);
        if (/^[0-9]$/.test(a.key)) { // the number keys are shown where the options are
          label.append(el("kbd", { class: "rw-kbd", "aria-hidden": "true",
            text: a.key.toUpperCase() }));
        }
        if (a.na) {
          label.dataset.na = "true";
          label.title = "Not applicable: scored as cannot assess";
        }
        return label;
      }));
    }
    for (const input of group.querySelectorAll("input")) {
      input.checked = input.value === mine.answer;
      input.disabled = !!form.pending;
    }
    if (document.activeElement !== note && note.value !== mine.note) note.value = mine.note;
    note.disabled = !!form.pending;
    const inFocus = focused(form) === criterion;
    root.dataset.focused = inFocus ? "true" : "false";
    if (inFocus) root.setAttribute("aria-current", "true");
    else root.removeAttribute("aria-current");
  };
}

function drawSave(root, form) {
  const save = button("Save", "", () => submit(form, false));
  const next = button("Save and next", "Ctrl+Enter", () => submit(form, true),
    { "aria-keyshortcuts": "Control+Enter",
      title: "Saves your verdicts and opens the next response at its top" });
  save.classList.add("rw-primary");
  const status = el("p", { class: "rw-status", role: "status", "aria-live": "polite" });
  // The name these buttons save under, on the form itself: a form drawn for another name
  // (renamed in another tab) is a new form and says so here.
  const who = form.savingAs ? el("span", { class: "rw-as" }, `Saving as ${form.savingAs}`) : "";
  root.append(el("div", { class: "rw-row" }, save, next, who), status);
  return () => {
    save.disabled = next.disabled = !!form.pending;
    status.textContent = form.pending ? form.message : "";
  };
}

const INSTANCES = new WeakMap(); // parentElement -> {root, form key, render, cleanup}

export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  if (!data || !data.form || !Array.isArray(data.criteria)) return;
  const form = formFor(data);
  adopt(form, data);
  let instance = INSTANCES.get(parentElement);
  const identity = `${data.form}|${data.part}|${data.criterion ?? ""}`;
  if (!instance || instance.identity !== identity) {
    if (instance) { instance.form.views.delete(instance.render); instance.root.remove(); }
    const root = el("div", { class: `rw-part rw-${data.part}`, "data-rw-form": data.form });
    let render;
    if (data.part === "criterion") {
      root.dataset.rwCriterion = String(data.criterion);
      render = drawCriterion(root, form, data.criterion);
    } else if (data.part === "save") {
      render = drawSave(root, form);
    } else {
      render = drawKeys(root, form);
    }
    parentElement.append(root);
    const previous = instance;
    instance = { identity, root, form, render, cleanup: null };
    if (!previous) {
      mounted += 1;
      instance.cleanup = () => {
        const now = INSTANCES.get(parentElement);
        if (now) { now.form.views.delete(now.render); now.root.remove(); }
        INSTANCES.delete(parentElement);
        mounted -= 1;
        lastUnmount = Date.now();
      };
    } else {
      instance.cleanup = previous.cleanup;
    }
    INSTANCES.set(parentElement, instance);
    form.views.add(render);
  }
  if (data.part !== "criterion") form.send = setTriggerValue;
  notify(form);
  return instance.cleanup;
}
