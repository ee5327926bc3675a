// simpe serve: the translator's page. Plain JavaScript, no build step, nothing fetched from elsewhere.
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
  let view = null, shownAt = 0, keys = [], busy = false, timer = null, offered = null, asked = 0;
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

  function fill(list, items) {
    list.replaceChildren();
    for (const [source, postEdit] of items) {
      const li = document.createElement("li");
      li.textContent = source;
      if (postEdit !== null) {
        const pe = document.createElement("span");
        pe.className = "pe";
        pe.textContent = postEdit;
        li.appendChild(pe);
      }
      list.appendChild(li);
    }
  }

  function show(next) {
    view = next;
    $("who").textContent = next.translator;
    $("progress").textContent = next.done_segments + " of " + next.total + " done";
    hideCompletion();
    if (next.done) {
      $("work").hidden = true;
      $("done").hidden = false;
      status("");
      return;
    }
    $("done").hidden = true;
    $("work").hidden = false;
    $("source").textContent = next.source;
    $("hypothesis").textContent = next.hypothesis;
    fill($("before"), next.before.map((s) => [s.source, s.post_edit]));
    fill($("after"), next.after.map((s) => [s, null]));
    editor.value = next.hypothesis;
    editor.dataset.index = String(next.index);
    keys = [];
    shownAt = performance.now();
    editor.focus();
    editor.setSelectionRange(editor.value.length, editor.value.length);
    status("");
  }

  const elapsed = () => Math.max(0, Math.round(performance.now() - shownAt));
  function log(op, arg) {
    if (keys.length < MAX_EVENTS) keys.push([elapsed(), op, arg]);
  }
  const selected = () => editor.selectionEnd - editor.selectionStart;

  editor.addEventListener("beforeinput", (event) => {
    const kind = event.inputType || "";
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
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      submit();
    } else if (event.key === "Tab" && offered !== null) {
      event.preventDefault();
      accept();
    } else if (["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"].includes(event.key)) {
      log("n", 0);
    }
  });
  editor.addEventListener("mousedown", () => log("m", 0));
  editor.addEventListener("input", () => {
    hideCompletion();
    if (view && view.protocol === "interactive") {
      clearTimeout(timer);
      timer = setTimeout(askCompletion, 150);
    }
  });

  // ---- the interactive protocol: the system completes what is typed before the caret
  function hideCompletion() {
    offered = null;
    $("completion").hidden = true;
  }
  async function askCompletion() {
    if (!view || view.done) return;
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
    editor.value = offered;
    editor.setSelectionRange(offered.length, offered.length);
    hideCompletion();
  }

  // ---- submitting
  async function submit() {
    if (busy || !view || view.done) return;
    busy = true;
    $("submit").disabled = true;
    status("saving…");
    const body = { index: view.index, post_edit: editor.value, seconds: (performance.now() - shownAt) / 1000, keys: keys };
    try {
      show(await api("/api/submit", body));
    } catch (err) {
      status("Not saved: " + err.message + ". Your post-edit is still here; submit again.", true);
    } finally {
      busy = false;
      $("submit").disabled = false;
    }
  }
  $("submit").addEventListener("click", submit);
  $("restore").addEventListener("click", () => {
    if (!view || view.done) return;
    log("m", 0);
    editor.value = view.hypothesis;
    editor.focus();
  });

  async function start() {
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
  start();
})();
