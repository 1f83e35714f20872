// pal studio: live updates and actions for the pages the server renders. No framework, nothing fetched from
// elsewhere: the pages work offline, and without this script they still show everything (but do not update).
"use strict";

(function () {
  const body = document.body;
  const token = document.querySelector('meta[name="pal-token"]').content;

  function post(path, data) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + token },
      body: JSON.stringify(data || {}),
      credentials: "same-origin",
    }).then(function (response) {
      return response.json().then(function (answer) {
        if (!response.ok) throw new Error(answer.error || response.statusText);
        return answer;
      });
    });
  }

  function say(text, kind) {
    let box = document.getElementById("flash");
    if (!box) {
      box = document.createElement("p");
      box.id = "flash";
      box.setAttribute("role", "status");
      document.querySelector("main").prepend(box);
    }
    box.className = "flash " + (kind || "info");
    box.textContent = text;
  }

  function live(on) {
    const mark = document.getElementById("live");
    if (mark) mark.hidden = !on;
  }

  // --- the threads list ---------------------------------------------------------------------------------------

  function threadsPage() {
    let since = body.dataset.since || "";
    const source = new EventSource("/api/list-events?since=" + encodeURIComponent(since));
    source.onopen = function () { live(true); };
    source.onerror = function () { live(false); };
    source.addEventListener("changed", function (event) {
      since = JSON.parse(event.data).since;
      const query = new URLSearchParams(window.location.search);
      query.set("fragment", "table");
      fetch("/?" + query.toString(), { credentials: "same-origin" })
        .then(function (response) { return response.text(); })
        .then(function (html) {
          const old = document.getElementById("threads");
          if (old) old.outerHTML = html;
        });
    });
  }

  // --- one thread ---------------------------------------------------------------------------------------------

  function threadPage() {
    const thread = body.dataset.thread;
    const idQuery = "id=" + encodeURIComponent(thread);

    function loadPrompt(details) {
      if (details.dataset.loaded) return;
      details.dataset.loaded = "1";
      const target = details.querySelector(".prompt-body");
      fetch("/api/prompt?" + idQuery + "&entry=" + details.dataset.entry, { credentials: "same-origin" })
        .then(function (response) { return response.json(); })
        .then(function (answer) {
          target.textContent = "";
          if (answer.error) { target.textContent = answer.error; return; }
          if (!answer.messages) { target.textContent = "not recorded"; return; }
          answer.messages.forEach(function (message) {
            const heading = document.createElement("h4");
            heading.textContent = message.role;
            const text = document.createElement("pre");
            const shared = document.createElement("span");
            shared.className = "shared";
            shared.title = "the part every turn of this playbook shares";
            shared.textContent = message.text.slice(0, message.shared);
            text.append(shared, document.createTextNode(message.text.slice(message.shared)));
            target.append(heading, text);
          });
        })
        .catch(function (error) { target.textContent = "could not load the prompt: " + error.message; });
    }

    document.addEventListener("toggle", function (event) {
      const details = event.target;
      if (details.classList && details.classList.contains("prompt") && details.open) loadPrompt(details);
    }, true);

    document.addEventListener("click", function (event) {
      const button = event.target.closest("button");
      if (!button) return;
      if (button.classList.contains("fork")) {
        const at = Number(button.dataset.at);
        button.disabled = true;
        post("/api/fork?" + idQuery, { at: at })
          .then(function (answer) { window.location.href = answer.url; })
          .catch(function (error) { button.disabled = false; say("fork: " + error.message, "error"); });
      } else if (button.id === "resume") {
        button.disabled = true;
        post("/api/resume?" + idQuery)
          .then(function () { say("resuming the thread…"); })
          .catch(function (error) { button.disabled = false; say("resume: " + error.message, "error"); });
      }
    });

    document.addEventListener("submit", function (event) {
      const form = event.target;
      if (form.id !== "answer") return;
      event.preventDefault();
      const text = form.elements.text.value;
      const button = form.querySelector("button");
      button.disabled = true;
      post("/api/answer?" + idQuery, { text: text })
        .then(function (answer) { say("answered (entry " + answer.entry + "); resuming the thread…"); })
        .catch(function (error) { button.disabled = false; say("answer: " + error.message, "error"); });
    });

    function loadChart(playbook) {
      const query = idQuery + (playbook ? "&playbook=" + encodeURIComponent(playbook) : "");
      return fetch("/thread/chart?" + query, { credentials: "same-origin" })
        .then(function (response) { return response.text(); })
        .then(function (html) { document.getElementById("chart-body").innerHTML = html; });
    }

    document.addEventListener("change", function (event) {
      if (event.target.name === "playbook" && event.target.closest(".chart-pick")) {
        body.dataset.playbook = event.target.value;
        loadChart(event.target.value);
      }
    });

    const groups = document.getElementById("groups");
    const source = new EventSource(
      "/api/events?" + idQuery + "&after=" + body.dataset.last + "&open=" + body.dataset.open
    );
    source.onopen = function () { live(true); };
    source.onerror = function () { live(false); };
    source.addEventListener("update", function (event) {
      const update = JSON.parse(event.data);
      // The groups from `from` on are sent again whole (a rejected answer's group grows with its retry).
      Array.prototype.slice.call(groups.children).forEach(function (group) {
        if (Number(group.dataset.first) >= update.from) group.remove();
      });
      groups.insertAdjacentHTML("beforeend", update.html);
      const summary = document.getElementById("summary");
      const typing = summary.querySelector("textarea");
      const draft = typing ? typing.value : "";
      const focused = typing && document.activeElement === typing;
      summary.innerHTML = update.summary;
      const again = summary.querySelector("textarea");
      if (again && draft) { again.value = draft; if (focused) again.focus(); }
      const changed = Number(body.dataset.last) !== update.last || body.dataset.status !== update.status;
      body.dataset.last = String(update.last);
      body.dataset.open = String(update.open);
      body.dataset.status = update.status;
      if (changed) chartSoon();
    });

    // A busy thread changes often: its flowchart is drawn again at most every 2 s (the last change included).
    let chartTimer = null;
    let chartAgain = false;
    function chartSoon() {
      if (chartTimer) { chartAgain = true; return; }
      loadChart(body.dataset.playbook);
      chartTimer = setTimeout(function () {
        chartTimer = null;
        if (chartAgain) { chartAgain = false; chartSoon(); }
      }, 2000);
    }
  }

  if (body.dataset.page === "threads") threadsPage();
  if (body.dataset.page === "thread") threadPage();
})();
