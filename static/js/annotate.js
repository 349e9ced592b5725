// Keyboard for the annotation pages: one key per label, s skip, u undo, c comment, ? the keys.
// The buttons are ordinary form buttons (they work without this file); a key clicks one of them.
//
// Prefetch: once a unit is shown, the page asks for the following one (?after=<unit>, leased to
// this person too) and keeps its fragment. A label then swaps that fragment in at once and saves
// the label in the background; the server's answer (the unit it hands out next) is checked
// against what is on screen and replaces it when they differ (an error, a lease lost). A failed
// save puts the labelled unit back with an alert; its request key makes a retry count once.
//
// Guard: label keys are ignored for data-key-guard-ms after a unit is painted, so that a key
// pressed twice by accident labels one unit, not the one that has just appeared as well.
// Trail: the last five labels given in this tab (the unit's snippet, the value's name), the
// last one with an undo; kept in sessionStorage so that a reload keeps it.
(function () {
  "use strict";

  var busy = false;
  var queued = null; // one key pressed while a label was being saved, replayed after it
  var prefetched = null; // {after: unit id on screen, html: fragment, at: time fetched}
  var pending = ""; // the unit whose label was sent by an ordinary htmx post
  var shownAt = 0; // when the unit on screen was painted (performance.now())
  var action = ""; // the form of the htmx request under way: "decision", "undo-form", "skip-form"
  var TRAIL_SIZE = 5;
  var COMMENT_NEEDED = "A comment is required for this choice: type it, press Esc, then the key again.";

  function region() {
    return document.getElementById("work");
  }

  function typing(element) {
    if (!element) return false;
    var tag = element.tagName;
    return tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT" || element.isContentEditable;
  }

  function hint(text) {
    var box = document.getElementById("comment-hint");
    if (box) box.textContent = text || "";
  }

  function focusComment(text) {
    var box = document.getElementById("comment");
    if (!box) return;
    box.focus();
    if (text) hint(text);
  }

  function alertBox(text) {
    var box = document.getElementById("work-alert");
    if (!box) return;
    box.textContent = text;
    box.hidden = !text;
  }

  function openKeys() {
    var dialog = document.getElementById("shortcuts-dialog");
    if (dialog && !dialog.open) dialog.showModal();
  }

  function fragment(html) {
    var holder = document.createElement("div");
    holder.innerHTML = html;
    return holder.querySelector("#work");
  }

  function place(element) {
    var work = region();
    if (!work || !element) return;
    work.replaceWith(element);
    if (window.htmx) window.htmx.process(element);
    toTop(element);
    afterShow();
  }

  // A new unit is read from its top, wherever the last one was scrolled to: the top of the work
  // region just below the sticky top bar (the stylesheet's scroll-padding-top), or the top of the
  // page when the region starts above that.
  function toTop(element) {
    if (element) element.scrollIntoView({ block: "start", inline: "nearest", behavior: "instant" });
  }

  function csrfToken() {
    var input = document.querySelector("#work input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function prefetch() {
    var work = region();
    // Never while a label is being saved: the server would still count the labelled unit as ours.
    if (busy || !work || !work.dataset.prefetch) return;
    var after = work.dataset.unit;
    if (prefetched && prefetched.after === after) return;
    fetch(work.dataset.prefetch, { headers: { "HX-Request": "true" }, credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        var current = region();
        if (html && current && current.dataset.unit === after && !busy) {
          prefetched = { after: after, html: html, at: Date.now() };
          document.documentElement.dataset.prefetched = after;
        }
      })
      .catch(function () {
        prefetched = null;
      });
  }

  function guardMs() {
    var holder = document.querySelector("[data-key-guard-ms]");
    return holder ? parseInt(holder.dataset.keyGuardMs, 10) || 0 : 0;
  }

  function painted() {
    shownAt = performance.now();
    // Counted from the frame that shows the unit, not from when its HTML arrived.
    window.requestAnimationFrame(function () {
      shownAt = performance.now();
    });
  }

  function trailKey() {
    return "attest-trail:" + window.location.pathname;
  }

  function loadTrail() {
    try {
      return JSON.parse(window.sessionStorage.getItem(trailKey()) || "[]");
    } catch (error) {
      return [];
    }
  }

  function saveTrail(items) {
    try {
      window.sessionStorage.setItem(trailKey(), JSON.stringify(items.slice(-TRAIL_SIZE)));
    } catch (error) {
      // Storage refused (private mode, full): the trail simply does not outlive the page.
    }
    // After the frame that paints the next unit: the trail must not delay it.
    var shown = items.slice(-TRAIL_SIZE);
    window.requestAnimationFrame(function () {
      window.setTimeout(function () {
        renderTrail(shown);
      }, 0);
    });
  }

  function renderTrail(items) {
    var box = document.getElementById("trail");
    if (!box) return;
    var list = box.querySelector("ol");
    list.textContent = "";
    box.hidden = !items.length;
    items
      .slice()
      .reverse()
      .forEach(function (item, index) {
        var entry = document.createElement("li");
        entry.className = "trail-item";
        entry.dataset.unit = item.unit;
        var value = document.createElement("strong");
        value.className = "trail-value value-" + item.value;
        value.textContent = item.name;
        var snippet = document.createElement("span");
        snippet.className = "trail-snippet";
        snippet.textContent = item.snippet;
        entry.appendChild(value);
        entry.appendChild(snippet);
        if (index === 0) {
          var undo = document.createElement("button");
          undo.type = "submit";
          undo.className = "quiet trail-undo";
          undo.setAttribute("form", "undo-form");
          undo.dataset.trailUndo = "true";
          var key = document.createElement("kbd");
          key.textContent = "u";
          undo.appendChild(key);
          undo.appendChild(document.createTextNode(" " + (box.dataset.undoText || "Undo")));
          entry.appendChild(undo);
        }
        list.appendChild(entry);
      });
  }

  function remember(button, work) {
    var name = button.querySelector(".choice-name");
    var items = loadTrail();
    items.push({
      unit: work.dataset.unit,
      value: button.dataset.value,
      name: name ? name.textContent : button.dataset.value,
      snippet: work.dataset.snippet || "",
    });
    saveTrail(items);
  }

  // A label that was not stored after all (refused, or its save failed) leaves the trail.
  function forget(unit) {
    var items = loadTrail();
    for (var i = items.length - 1; i >= 0; i--) {
      if (items[i].unit === unit) {
        items.splice(i, 1);
        saveTrail(items);
        return;
      }
    }
  }

  function afterShow() {
    painted();
    var work = region();
    if (work && work.dataset.focus === "comment") focusComment(COMMENT_NEEDED);
    prefetch();
  }

  // The prefetched fragment of the unit after the one on screen, if its lease is surely still ours.
  function ready(work) {
    if (!prefetched || prefetched.after !== work.dataset.unit || !work.dataset.submit) return null;
    var lease = 1000 * (parseInt(work.dataset.leaseSeconds, 10) || 0);
    if (Date.now() - prefetched.at > lease - 60000) return null;
    var next = fragment(prefetched.html);
    return next && next.dataset.unit ? next : null;
  }

  function finish() {
    busy = false;
    document.documentElement.removeAttribute("data-saving");
    if (queued) {
      var event = queued;
      queued = null;
      handle(event);
    } else {
      prefetch();
    }
  }

  // Show the prefetched unit at once and save the label of the unit that was on screen.
  function labelAhead(button, work, next) {
    var form = button.form;
    var data = new FormData(form);
    data.append(button.name, button.value);
    busy = true;
    prefetched = null;
    document.documentElement.removeAttribute("data-prefetched");
    document.documentElement.setAttribute("data-saving", "true");
    alertBox("");
    var previous = work;
    place(next);
    fetch(work.dataset.submit, {
      method: "POST",
      body: data,
      headers: { "HX-Request": "true", "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
    })
      .then(function (response) {
        if (!response.ok) throw new Error(String(response.status));
        return response.text();
      })
      .then(function (html) {
        var answer = fragment(html);
        var shown = region();
        if (!answer || !shown) return;
        var refused = answer.querySelector(".msg.error");
        if (refused) forget(previous.dataset.unit);
        if (refused || answer.dataset.unit !== shown.dataset.unit) {
          place(answer);
          return;
        }
        // Same unit: keep what is on screen (a comment may be under way), refresh the counts.
        var status = answer.querySelector(".work-status");
        var old = shown.querySelector(".work-status");
        if (status && old) old.replaceWith(status);
      })
      .catch(function (error) {
        forget(previous.dataset.unit);
        place(previous);
        alertBox(
          (error && /^\d+$/.test(error.message) ? "The server answered " + error.message + "." : "No connection.") +
            " Your last label was not confirmed: press the key again, it will not be counted twice."
        );
      })
      .then(finish, finish);
  }

  function press(button) {
    if (!button || button.disabled) return;
    if (button.dataset.needsComment === "true") {
      var box = document.getElementById("comment");
      if (box && !box.value.trim()) {
        focusComment(COMMENT_NEEDED);
        return;
      }
    }
    var work = region();
    if (work && button.dataset.value !== undefined) {
      pending = work.dataset.unit;
      remember(button, work);
    }
    var next = work && button.dataset.value !== undefined && button.form ? ready(work) : null;
    if (next) {
      labelAhead(button, work, next);
      return;
    }
    button.click();
  }

  // The button a key stands for: its own data-key, or the digit of a label whatever the layout
  // (on AZERTY keyboards the top-row "1" sends "&" unless Shift is held).
  function buttonFor(event, work) {
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    var digit = /^(?:Digit|Numpad)(\d)$/.exec(event.code || "");
    var buttons = work.querySelectorAll("button[data-key]");
    var i;
    for (i = 0; i < buttons.length; i++) {
      if (buttons[i].dataset.key.toLowerCase() === key) return buttons[i];
    }
    for (i = 0; i < buttons.length; i++) {
      var value = buttons[i].dataset.value;
      if (value !== undefined && (value === key || (digit && value === digit[1]))) return buttons[i];
    }
    return null;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      // Esc leaves the comment box so that the next key labels; Enter stays a new line.
      if (event.key === "Escape") {
        event.target.blur();
        event.preventDefault();
      }
      return;
    }
    var work = region();
    var button = work ? buttonFor(event, work) : null;
    if (button && button.dataset.value !== undefined && performance.now() - shownAt < guardMs()) {
      // Too soon after the unit appeared to be meant for it: a repeated or bouncing key.
      event.preventDefault();
      return;
    }
    handle(event);
  });

  function handle(event) {
    var dialog = document.getElementById("shortcuts-dialog");
    if (dialog && dialog.open) return;
    var work = region();
    if (!work) return;
    if (event.key === "?") {
      event.preventDefault();
      openKeys();
      return;
    }
    if (busy) {
      // Labelling ahead of the save: keep the key for when it is done, rather than lose it.
      if (document.documentElement.hasAttribute("data-saving")) {
        queued = { key: event.key, code: event.code, preventDefault: function () {} };
      }
      event.preventDefault();
      return;
    }
    if (event.key === "c" || event.key === "C") {
      event.preventDefault();
      focusComment("");
      return;
    }
    var button = buttonFor(event, work);
    if (button) {
      event.preventDefault();
      press(button);
    }
  }

  // A citation chip shows its source's card: opened if it sits in a closed <details>, scrolled to
  // if off screen, focused and highlighted for a moment (the keys keep labelling from there).
  function showSource(link) {
    var card = document.getElementById(link.getAttribute("href").slice(1));
    if (!card) return false;
    var holder = card.closest("details");
    if (holder && !holder.open) holder.open = true;
    card.scrollIntoView({ block: "nearest", behavior: "instant" });
    card.focus({ preventScroll: true });
    card.classList.add("source-flash");
    window.setTimeout(function () {
      card.classList.remove("source-flash");
    }, 1600);
    return true;
  }

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    var chip = event.target.closest("a.cite-link");
    if (chip && showSource(chip)) event.preventDefault();
    if (event.target.closest("[data-open-shortcuts]")) openKeys();
    // Undoing while a label is still being saved would withdraw the one before it.
    if (event.target.closest("[data-trail-undo]") && busy) event.preventDefault();
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    busy = true;
    action = event.detail && event.detail.elt ? event.detail.elt.id || "" : "";
    alertBox("");
  });
  document.addEventListener("htmx:afterRequest", function () {
    busy = false;
    prefetch();
  });
  document.addEventListener("htmx:afterSwap", function () {
    prefetched = null;
    var work = region();
    var refused = work && work.querySelector(".msg.error");
    if (action === "decision" && refused && pending) forget(pending);
    if (action === "undo-form" && !refused) {
      var items = loadTrail();
      items.pop();
      saveTrail(items);
    }
    action = "";
    pending = "";
    toTop(work);
    afterShow();
  });
  document.addEventListener("htmx:responseError", function (event) {
    if (action === "decision" && pending) forget(pending);
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : "an error";
    alertBox("The server answered " + status + ". Your saved labels are safe; reload the page.");
  });
  document.addEventListener("htmx:sendError", function () {
    if (action === "decision" && pending) forget(pending);
    alertBox(
      "No connection: your last action was not confirmed. Press the key again when the connection is back; it will not be counted twice."
    );
  });
  document.addEventListener("DOMContentLoaded", function () {
    renderTrail(loadTrail());
    afterShow();
  });
})();
