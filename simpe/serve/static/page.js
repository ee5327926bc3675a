// simpe serve: the translator's workbench. Plain JavaScript, no build step, nothing fetched from elsewhere.
// Every text from the server is set with textContent (never parsed as HTML). The access token comes in the link's
// fragment (#token=...), which the browser never sends to a server; it is kept for this tab only (sessionStorage)
// and sent in the Authorization header, never in a cookie. docs/serve.md describes the key log this page records.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const MAX_EVENTS = 20000;
  let token = sessionStorage.getItem("simpe-token");
  const found = /(?:^#|&)token=([A-Za-z0-9_-]{20,100})/.exec(location.hash);
  if (found) {
    token = found[1];
    sessionStorage.setItem("simpe-token", token);
    history.replaceState(null, "", location.pathname);  // the token leaves the address bar and the history
  }
  // view: the segment on the page (the current one or a submitted one being revised); current: the loop's next
  let view = null, current = null, keys = [], busy = false, timer = null, checker = null, offered = null, asked = 0;
  let shownAt = 0, pauses = [], pausedAt = null, lastValue = "", lastCaret = 0;
  let unanswered = null;  // a submission the server did not answer: sent again as it was (the server records it once)
  // drafts: what is typed and not saved, with its timer and key log, kept per segment and version here and on the
  // server (a draft event, after a pause in typing, on leaving the segment or the page); the view gives it back
  let start = null, dirty = false, drafter = null, replacing = false, warnings = [], overridden = null;
  const drafts = new Map();  // "index:version" -> the draft body (if the server did not take it)
  // the starts of the replacements, so that Ctrl+Z of a replacement gives back the start before it (and Ctrl+Y redoes)
  let undoStarts = [], redoStarts = [];
  const editor = $("post-edit");

  function status(text, error) {
    const line = $("status");
    line.textContent = text;
    line.className = error ? "error" : "";
  }

  async function api(path, body) {
    const init = { headers: { "Authorization": "Bearer " + token }, cache: "no-store", credentials: "omit" };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    let data = null;
    try { data = await response.json(); } catch (err) { data = null; }
    if (!response.ok) throw new Error((data && data.error) || ("the server answered " + response.status));
    return data;
  }

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function fill(list, items) {
    list.replaceChildren();
    for (const [source, postEdit] of items) {
      const li = element("li", source);
      if (postEdit !== null) li.appendChild(element("span", postEdit, "pe"));
      list.appendChild(li);
    }
  }

  // ---- the timer: editing time of the segment on the page, pauses excluded (and recorded)
  const elapsed = () => Math.max(0, Math.round(performance.now() - shownAt));
  function pausedMs() {
    let total = pauses.reduce((sum, [a, b]) => sum + (b - a), 0);
    if (pausedAt !== null) total += elapsed() - pausedAt;
    return total;
  }
  const activeSeconds = () => Math.max(0, (elapsed() - pausedMs()) / 1000);
  function tick() {
    const seconds = view && !view.done ? Math.floor(activeSeconds()) : 0;
    $("timer").textContent = Math.floor(seconds / 60) + ":" + String(seconds % 60).padStart(2, "0");
  }
  setInterval(tick, 500);
  function togglePause() {
    if (!view || view.done) return;
    if (pausedAt === null) {
      pausedAt = elapsed();
      $("paused").hidden = false;
      $("work").hidden = true;
      $("pause").textContent = "Resume";
      $("resume").focus();
    } else {
      pauses.push([pausedAt, elapsed()]);
      pausedAt = null;
      $("paused").hidden = true;
      $("work").hidden = false;
      $("pause").textContent = "Pause";
      editor.focus();
    }
    tick();
  }
  $("pause").addEventListener("click", togglePause);
  $("resume").addEventListener("click", togglePause);

  // ---- showing a segment
  function showSource(source, terms) {
    const spans = [];
    for (const hit of terms) for (const [a, b] of hit.spans) spans.push([a, b, hit]);
    spans.sort((x, y) => x[0] - y[0] || (y[1] - y[0]) - (x[1] - x[0]));
    const p = $("source");
    p.replaceChildren();
    let at = 0;
    for (const [a, b, hit] of spans) {
      if (a < at) continue;  // overlapping terms: the longer one, which starts first, is marked
      p.appendChild(document.createTextNode(source.slice(at, a)));
      const mark = element("mark", source.slice(a, b));
      mark.title = hit.source + " → " + hit.target;
      p.appendChild(mark);
      at = b;
    }
    p.appendChild(document.createTextNode(source.slice(at)));
  }

  const versionOf = (v) => v.status === "done" ? v.versions + 1 : 1;
  const draftKey = (v) => v.index + ":" + versionOf(v);

  function show(next) {
    clearTimeout(drafter);
    dirty = false;
    view = next;
    unanswered = null;
    warnings = [];
    overridden = null;
    $("who").textContent = next.translator;
    $("progress").textContent = next.done_segments + " of " + next.total + " done";
    current = next.done_segments < next.total ? next.done_segments : null;
    hideCompletion();
    pauses = [];
    pausedAt = null;
    $("paused").hidden = true;
    $("pause").textContent = "Pause";
    keys = [];
    shownAt = performance.now();
    if (next.done) {
      $("work").hidden = true;
      $("done").hidden = false;
      $("document").textContent = "";
      status("");
      refreshList();
      return;
    }
    $("done").hidden = true;
    $("work").hidden = false;
    $("document").textContent = "Document: " + next.doc_id;
    $("segment-number").textContent = "(segment " + (next.index + 1) + " of " + next.total + ")";
    $("source").lang = next.src_lang;
    showSource(next.source, next.terms);
    $("hypothesis").textContent = next.hypothesis;
    $("hypothesis").lang = next.tgt_lang;
    editor.lang = next.tgt_lang;
    editor.spellcheck = true;
    fill($("before"), next.before.map((s) => [s.source, s.post_edit]));
    fill($("after"), next.after.map((s) => [s, null]));
    const terms = $("terms");
    terms.replaceChildren(...next.terms.slice(0, 9).map((t, i) => element("li", t.source + " → " + t.target + "  (Alt+" + (i + 1) + ")")));
    $("tags-line").hidden = !(next.tags || []).length;
    $("tags-line").textContent = (next.tags || []).length ? "Tags: " + next.tags.join(" ") + "  (Alt+T inserts the next one missing)" : "";
    $("terms-panel").hidden = next.terms.length === 0;
    const matches = $("matches");
    matches.replaceChildren(...next.matches.map((m) => {
      const li = element("li");
      li.appendChild(element("span", m.score + "%", "score"));
      li.appendChild(element("span", "Ctrl+" + m.rank + " · " + (m.origin === "memory" ? "memory" : "your post-edit of segment " + (m.index + 1)), "origin"));
      li.appendChild(element("span", m.target, "target"));
      const msource = element("span", null, "msource");
      diffInto(msource, words(next.source), words(m.source), true);  // how its source differs from this one
      li.appendChild(msource);
      return li;
    }));
    $("matches-panel").hidden = next.matches.length === 0;
    const revising = next.status === "done";
    $("editor-label").textContent = revising ? "Your post-edit (revising version " + next.versions + ")" : "Your post-edit";
    $("submit").textContent = revising ? "Save the revision and next" : "Submit and next";
    const note = $("revision-note");
    note.hidden = !revising;
    note.textContent = revising ? "You are revising a submitted segment. Saving records version " + (next.versions + 1) +
      ". The model learned from the version you first submitted; it is not rolled back and does not learn again from " +
      "this revision. Your latest version is the final post-edit (the study's figures and the XLIFF export use it)." : "";
    $("comments").replaceChildren(...next.comments.map((c) => element("li", c)));
    $("flag").setAttribute("aria-pressed", next.flagged ? "true" : "false");
    $("flag").textContent = next.flagged ? "Flagged" : "Flag";
    start = next.status === "done" ? null : { origin: next.target ? "target" : "mt" };
    undoStarts = [];
    redoStarts = [];
    setEditor(next.post_edit);
    const draft = drafts.get(draftKey(next)) || (next.draft && { post_edit: next.draft.post_edit, ...next.draft.human });
    if (draft) {  // back where the translator left it: text, key log, pauses and the clock
      setEditor(draft.post_edit);
      keys = draft.keys || [];
      pauses = draft.pauses || [];
      shownAt = performance.now() - (draft.elapsed_ms || 0);
      if (draft.start) start = draft.start;
      $("draft-state").textContent = "draft restored";
    } else {
      $("draft-state").textContent = "";
    }
    const notes = $("notes");
    notes.replaceChildren(...(next.notes || []).map((n) => element("li", n)));
    notes.hidden = !(next.notes || []).length;
    $("qa-panel").hidden = true;
    editor.dataset.index = String(next.index);
    editor.focus();
    editor.setSelectionRange(editor.value.length, editor.value.length);
    lastCaret = editor.value.length;
    status("");
    showDiff();
    checkTerms();
    refreshList();
  }

  function setEditor(text) {
    editor.value = text;
    lastValue = text;
  }

  async function refreshList() {
    try {
      const list = await api("/api/segments");
      const ol = $("segment-list");
      ol.replaceChildren(...list.segments.map((s) => {
        const li = element("li");
        const button = element("button");
        button.type = "button";
        button.dataset.index = String(s.index);
        button.disabled = s.status === "todo";
        if (view && !view.done && view.index === s.index) button.className = "open";
        button.appendChild(element("span", s.status === "done" ? (s.versions > 1 ? "v" + s.versions : "done") : s.status, "st " + s.status));
        button.appendChild(element("span", String(s.index + 1), "num"));
        button.appendChild(element("span", (s.draft ? "• " : "") + (s.flagged ? "⚑ " : "") + (s.comments ? "✎" + s.comments + " " : "") + s.source, "text"));
        if (s.draft) button.title = "unsaved draft · ";
        button.title = (button.title || "") + s.doc_id + ": " + s.source;
        button.addEventListener("click", () => open(s.index));
        li.appendChild(button);
        return li;
      }));
    } catch (err) {
      status(err.message, true);
    }
  }

  async function open(index) {
    if (busy) return;
    if (index < 0 || (current !== null && index > current) || (current === null && view && index >= view.total)) return;
    await saveDraft();  // leaving keeps the draft
    try {
      show(await api(current !== null && index === current ? "/api/segment" : "/api/segment?index=" + index));
    } catch (err) {
      status(err.message, true);
    }
  }

  // ---- the live diff of the machine translation against the editor (words, longest common subsequence)
  function words(text) { return text.match(/\s+|[^\s]+/g) || []; }
  // out gets b with its differences from a: ins for words of b only, del for words of a only (or, with onlyB,
  // just b's own words marked: a match's source against the current source)
  function diffInto(out, a, b, onlyB) {
    const n = a.length, m = b.length;
    const table = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    out.replaceChildren();
    let i = 0, j = 0;
    const put = (tag, text) => out.appendChild(tag && text.trim() ? element(tag, text) : document.createTextNode(text));
    while (i < n || j < m) {
      if (i < n && j < m && a[i] === b[j]) { put(null, a[i]); i++; j++; }
      else if (j < m && (i === n || table[i][j + 1] >= table[i + 1][j])) { put(onlyB ? "del" : "ins", b[j]); j++; }
      else { if (!onlyB) put("del", a[i]); else if (a[i].trim()) put("ins", "+" + a[i]); i++; }
    }
  }
  function showDiff() {
    if (!view || view.done) return;
    diffInto($("diff"), words(view.hypothesis), words(editor.value), false);
  }

  // ---- glossary terms the draft leaves out (the server applies the one matching rule)
  // ---- QA: the glossary's terms, tags, numbers, spaces and punctuation, checked by the server (warnings only)
  async function runCheck() {
    const index = view.index, text = editor.value;
    const answer = await api("/api/check", { index: index, text: text });
    if (!view || view.index !== index || editor.value !== text) return null;
    warnings = answer.warnings;
    $("qa").replaceChildren(...warnings.map((w) => element("li", w.text)));
    $("qa-panel").hidden = warnings.length === 0;
    return warnings;
  }
  function checkTerms() {
    clearTimeout(checker);
    if (!view || view.done) return;
    checker = setTimeout(async () => {
      try { await runCheck(); } catch (err) { /* a check that fails says nothing: submitting says what matters */ }
    }, 250);
  }

  // ---- drafts
  function draftBody() {
    const open = pausedAt === null ? pauses : [...pauses, [pausedAt, elapsed()]];
    const body = { index: view.index, post_edit: editor.value, seconds: activeSeconds(), keys: keys, pauses: open,
      elapsed_ms: elapsed() };
    if (start) body.start = start;
    return body;
  }
  function touched() {  // something to keep: a draft is saved soon
    if (!view || view.done) return;
    dirty = true;
    $("draft-state").textContent = "";
    clearTimeout(drafter);
    drafter = setTimeout(saveDraft, 800);
  }
  async function saveDraft(keepalive) {
    clearTimeout(drafter);
    if (!dirty || !view || view.done) return;
    const body = draftBody(), key = draftKey(view);
    drafts.set(key, body);
    dirty = false;
    try {
      if (keepalive) {
        fetch("/api/draft", { method: "POST", keepalive: true, credentials: "omit", cache: "no-store",
          headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" }, body: JSON.stringify(body) });
        return;
      }
      await api("/api/draft", body);
      if (drafts.get(key) === body) drafts.delete(key);  // the server has it (and gives it back with the view)
      if (view && draftKey(view) === key) $("draft-state").textContent = "draft saved";
    } catch (err) {
      status("The draft is kept in this page only: " + err.message, true);
    }
  }
  window.addEventListener("pagehide", () => saveDraft(true));
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") saveDraft(true); });

  // ---- the key log
  function log(op, arg) {
    if (keys.length < MAX_EVENTS) keys.push([elapsed(), op, arg]);
  }
  const selected = () => editor.selectionEnd - editor.selectionStart;
  const tags = () => (view && view.tags) || [];
  const missingTag = (text) => tags().find((t) => !text.includes(t));

  function withTags(text) {  // the source's tags a replacement lacks, appended for the translator to place
    const lacking = tags().filter((t) => !text.includes(t));
    return lacking.length ? [text, ...lacking].join(" ") : text;
  }
  // text typed in by the browser's editing (execCommand), so Ctrl+Z undoes it as any typing
  function typeIn(text, whole) {
    editor.focus();
    if (whole) editor.select();
    replacing = true;
    const done = document.execCommand("insertText", false, text);
    replacing = false;
    if (!done) editor.setRangeText(text, whole ? 0 : editor.selectionStart, whole ? editor.value.length : editor.selectionEnd, "end");
    lastValue = editor.value;
    afterChange();
  }
  function replaceAll(text, op) {  // a whole-text replacement by a shortcut or a button (one key event), undoable
    if (!view || view.done || pausedAt !== null) return;
    log(op, op === "t" ? text.rank : text.length);
    const before = editor.value, was = start;
    if (view.status !== "done") start = op === "t" ? { origin: "match", rank: text.rank } : { origin: op === "s" ? "source" : "mt" };
    typeIn(withTags(op === "t" ? text.target : text), true);
    undoStarts.push({ before: before, after: editor.value, start: was, then: start });
    redoStarts = [];
    editor.setSelectionRange(editor.value.length, editor.value.length);
  }
  function insertAtCaret(text, op) {  // a glossary term or a tag at the caret (one key event), undoable
    if (!view || view.done || pausedAt !== null || !text) return;
    log(op, text.length);
    typeIn(text, false);
  }
  function afterChange() {
    hideCompletion();
    showDiff();
    checkTerms();
    touched();
  }

  editor.addEventListener("beforeinput", (event) => {
    if (replacing) return;  // a replacement or an insert: logged as one event already
    const kind = event.inputType || "";
    lastValue = editor.value;
    lastCaret = editor.selectionStart;
    if (kind === "insertLineBreak" || kind === "insertParagraph") {  // a segment is one line: Enter does nothing
      event.preventDefault();
      return;
    }
    if (kind === "insertFromPaste" || kind === "insertFromDrop") {
      const text = event.dataTransfer ? event.dataTransfer.getData("text/plain") : (event.data || "");
      log("p", text.length);
    } else if (kind.startsWith("insert")) {
      log("i", event.data || "");
    } else if (kind === "deleteByCut") {
      log("x", selected());
    } else if (kind.startsWith("delete")) {
      log("d", Math.max(1, selected()));
    } else if (kind.startsWith("history")) {
      log("u", 0);
    }
  });
  editor.addEventListener("input", (event) => {
    const lost = missingTag(editor.value);
    if (lost && (event.inputType || "") !== "deleteByCut" && !missingTag(lastValue)) {
      // a tag of the source cannot be deleted (cut and paste moves it)
      editor.value = lastValue;
      editor.setSelectionRange(lastCaret, lastCaret);
      status("The tag " + lost + " cannot be deleted; cut and paste it to move it.", true);
      return;
    }
    lastValue = editor.value;
    const kind = event.inputType || "";
    if (kind === "historyUndo" && undoStarts.length && undoStarts[undoStarts.length - 1].before === editor.value) {
      const undone = undoStarts.pop();  // a replacement undone: its start too
      start = undone.start;
      redoStarts.push(undone);
    } else if (kind === "historyRedo" && redoStarts.length && redoStarts[redoStarts.length - 1].after === editor.value) {
      const redone = redoStarts.pop();
      start = redone.then;
      undoStarts.push(redone);
    }
    afterChange();
    if (view && view.protocol === "interactive" && view.status === "current") {
      clearTimeout(timer);
      timer = setTimeout(askCompletion, 150);
    }
  });
  const MOVES = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"];
  editor.addEventListener("keydown", (event) => {
    const ctrl = event.ctrlKey || event.metaKey;
    if (event.key === "Tab" && offered !== null && !ctrl) {
      event.preventDefault();
      accept();
    } else if (MOVES.includes(event.key) && !(ctrl && !event.shiftKey && ["ArrowUp", "ArrowDown"].includes(event.key))) {
      log(event.shiftKey ? "v" : "n", 0);  // a move (a word at a time with Ctrl) or, with Shift, a selection
      touched();
    } else if (ctrl && !event.shiftKey && !event.altKey && event.key.toLowerCase() === "a") {
      log("v", 0);  // select all
      touched();
    }
  });
  editor.addEventListener("mousedown", () => { log("m", 0); touched(); });

  // ---- shortcuts (listed on the page), wherever the focus is
  // ---- shortcuts (listed on the page); where the focus says: in the comment box, Ctrl+Enter adds the comment and
  // only Ctrl+P acts on the segment
  document.addEventListener("keydown", (event) => {
    const ctrl = event.ctrlKey || event.metaKey;
    const inComment = event.target && event.target.id === "comment";
    if (event.altKey && !ctrl && !inComment && view && !view.done && pausedAt === null) {
      const digit = /^Digit([1-9])$/.exec(event.code || "");
      if (digit && view.terms[Number(digit[1]) - 1]) {
        event.preventDefault();
        insertAtCaret(view.terms[Number(digit[1]) - 1].target, "g");
      } else if (event.code === "KeyT") {
        event.preventDefault();
        insertAtCaret(missingTag(editor.value), "k");
      }
      return;
    }
    if (!ctrl || event.altKey) return;
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    let handled = true;
    if (key === "p") togglePause();
    else if (inComment) {
      if (key === "Enter") addComment(); else handled = false;
    }
    else if (pausedAt !== null) handled = false;
    else if (key === "Enter") submit();
    else if (key === "ArrowDown" && view && !view.done) open(view.index + 1);
    else if (key === "ArrowUp") open(view && !view.done ? view.index - 1 : (current === null && view ? view.total - 1 : -1));
    else if (key === "i" && view && !view.done) replaceAll(view.source, "s");
    else if (key === "m" && view && !view.done) replaceAll(view.hypothesis, "r");
    else if (["1", "2", "3"].includes(key) && view && !view.done) {
      const match = view.matches[Number(key) - 1];
      if (match) replaceAll(match, "t");
    } else handled = false;
    if (handled) event.preventDefault();
  });

  // ---- the interactive protocol: the system completes what is typed before the caret
  function hideCompletion() {
    offered = null;
    $("completion").hidden = true;
  }
  async function askCompletion() {
    if (!view || view.done || view.status !== "current") return;
    const prefix = editor.value.slice(0, editor.selectionStart);
    const ticket = ++asked;
    try {
      const answer = await api("/api/complete", { index: view.index, prefix: prefix });
      const now = editor.value.slice(0, editor.selectionStart);
      if (ticket !== asked || answer.index !== view.index || now !== prefix) return;  // the translator typed on
      if (!answer.completion.startsWith(prefix) || answer.completion === editor.value) return;
      offered = answer.completion;
      const line = $("completion");
      line.querySelector(".typed").textContent = prefix;
      line.querySelector(".offered").textContent = offered.slice(prefix.length);
      line.hidden = false;
    } catch (err) {
      status(err.message, true);
    }
  }
  function accept() {
    const prefix = editor.value.slice(0, editor.selectionStart);
    log("c", offered.length - prefix.length);
    setEditor(offered);
    editor.setSelectionRange(offered.length, offered.length);
    hideCompletion();
    showDiff();
  }

  // ---- submitting a post-edit, or saving a revision
  async function submit() {
    if (busy || !view || view.done || pausedAt !== null) return;
    const lost = missingTag(editor.value);
    if (lost) {
      status("The tag " + lost + " of the source is missing: paste it back where it belongs.", true);
      return;
    }
    if (view.status === "done" && editor.value === view.post_edit) {  // nothing changed: no revision, back to work
      dirty = false;
      drafts.delete(draftKey(view));
      if (current !== null) await open(current);
      status("Unchanged: no revision recorded.");
      return;
    }
    clearTimeout(checker);
    busy = true;
    $("submit").disabled = true;
    try {  // QA warnings first: a second Ctrl+Enter on the same text submits anyway (the record keeps them)
      const found = await runCheck();
      if (found && found.length && overridden !== editor.value) {
        overridden = editor.value;
        status("QA: " + found.length + " warning" + (found.length > 1 ? "s" : "") + " (listed). Ctrl+Enter again submits anyway.", true);
        return;
      }
    } catch (err) {
      status(err.message, true);
    } finally {
      busy = false;
      $("submit").disabled = false;
    }
    busy = true;
    $("submit").disabled = true;
    status("saving…");
    clearTimeout(drafter);
    const revising = view.status === "done", key = draftKey(view);
    const same = unanswered && unanswered.index === view.index && unanswered.post_edit === editor.value;
    const body = same ? unanswered : { index: view.index, post_edit: editor.value, seconds: activeSeconds(), keys: keys, pauses: pauses };
    if (!same && start && !revising) body.start = start;
    unanswered = body;
    try {
      const answer = await api(revising ? "/api/revise" : "/api/submit", body);
      drafts.delete(key);
      show(answer);
      if (revising) status(answer.unchanged !== undefined ? "Unchanged: no revision recorded." : "Revision saved; back to segment " + (answer.done ? "list" : answer.index + 1) + ".");
      unanswered = null;
    } catch (err) {
      status("Not saved: " + err.message + ". Your post-edit is still here; submit again.", true);
    } finally {
      busy = false;
      $("submit").disabled = false;
    }
  }
  $("submit").addEventListener("click", submit);
  $("restore").addEventListener("click", () => { if (view && !view.done) replaceAll(view.hypothesis, "r"); });
  $("copy-source").addEventListener("click", () => { if (view && !view.done) replaceAll(view.source, "s"); });

  // ---- comments and flags
  async function note(body) {
    if (!view || view.done) return;
    try {
      const answer = await api("/api/note", { index: view.index, ...body });
      if (answer.index !== view.index) return;
      view.comments = answer.comments;
      view.flagged = answer.flagged;
      $("comments").replaceChildren(...answer.comments.map((c) => element("li", c)));
      $("flag").setAttribute("aria-pressed", answer.flagged ? "true" : "false");
      $("flag").textContent = answer.flagged ? "Flagged" : "Flag";
      refreshList();
    } catch (err) {
      status(err.message, true);
    }
  }
  function addComment() {
    const text = $("comment").value;
    if (!text.trim()) return;
    $("comment").value = "";
    note({ comment: text });
  }
  $("add-comment").addEventListener("click", addComment);
  $("comment").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.ctrlKey && !event.metaKey) { event.preventDefault(); addComment(); }
  });
  $("flag").addEventListener("click", () => note({ flagged: !(view && view.flagged) }));

  async function boot() {
    if (!token) {
      status("Open the link you were given: it holds your access token.", true);
      return;
    }
    status("loading…");
    try {
      show(await api("/api/segment"));
    } catch (err) {
      status(err.message, true);
    }
  }
  boot();
})();
