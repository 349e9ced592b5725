// Keyboard for the annotation pages: one key per label, s skip, u undo, c comment, ? the keys.
// The buttons are ordinary form buttons (they work without this file); a key clicks one of them.
// Every text this file shows comes from the page, translated (#annotate-texts, data attributes).
//
// Prefetch: the page keeps the fragment of the unit after the one on screen (leased to this person
// too). A label swaps it in at once and saves the label in the background, naming the unit now on
// screen (shown); the server answers with the unit after that one (data-after), which the page
// keeps in turn: one request per label. When the server answers with another unit (an error, a
// lease lost), that unit replaces the one on screen. Only when it holds none (the page just
// opened, after a skip or an undo) does the page ask for it (?after=<unit>). A failed save puts
// the labelled unit back with an alert; its request key makes a retry count once.
//
// Guard: label keys are ignored for data-key-guard-ms after a unit is painted, so that a key
// pressed twice by accident labels one unit, not the one that has just appeared as well. No key is
// lost without a word: one not taken (too soon, while the server has not answered, a key that does
// nothing) shows a brief cue (#key-cue, also read by screen readers).
// Comment box: a choice that needs a comment (an override, an adjudication) opens a modal dialog,
// and so does c. Enter saves (and gives the label the box was opened for), Shift+Enter makes a new
// line, Esc cancels and stores nothing. While it is open no key labels; keys pressed as it opens
// (within the guard's time of its showing or of the last key so refused, or the opening key held
// down) are not typed, with a cue in the box.
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
  var CUE_MS = 2200;
  var texts = null; // the page's texts, read once
  var cueTimer = 0;
  var writing = null; // the comment box while open: {unit, value (the choice it gives, or null), key, openedAt}

  document.documentElement.classList.add("js");

  // A text of the page in the reader's language, its %(name)s placeholders filled.
  function say(name, values) {
    if (!texts) {
      var holder = document.getElementById("annotate-texts");
      try {
        texts = holder ? JSON.parse(holder.textContent) : {};
      } catch (error) {
        texts = {};
      }
    }
    var text = texts[name] || "";
    Object.keys(values || {}).forEach(function (key) {
      text = text.split("%(" + key + ")s").join(values[key]);
    });
    return text;
  }

  function region() {
    return document.getElementById("work");
  }

  function typing(element) {
    if (!element) return false;
    var tag = element.tagName;
    return tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT" || element.isContentEditable;
  }

  function printable(event) {
    return event.key.length === 1 && event.key !== " ";
  }

  // A key not taken: said for a moment above the decision bar (and to screen readers), its
  // button outlined; the count is what a test or the keystroke bench reads.
  function cue(text, button) {
    var shown = document.getElementById("key-cue");
    if (!shown) return;
    shown.dataset.count = String((parseInt(shown.dataset.count, 10) || 0) + 1);
    shown.textContent = text;
    // Just above the decision bar, whatever its height (a phone's, one with a note).
    var bar = document.getElementById("decision");
    var top = bar ? Math.min(bar.getBoundingClientRect().top, window.innerHeight) : window.innerHeight;
    shown.style.bottom = Math.max(8, window.innerHeight - top + 8) + "px";
    shown.classList.add("shown");
    if (button) {
      button.classList.add("key-refused");
      window.setTimeout(function () {
        button.classList.remove("key-refused");
      }, 400);
    }
    window.clearTimeout(cueTimer);
    cueTimer = window.setTimeout(function () {
      shown.classList.remove("shown");
      shown.textContent = "";
    }, CUE_MS);
  }

  function notTaken(key, reason, button) {
    cue(say(reason, { key: key }), button);
  }

  // Said to screen readers (a region that outlives the unit, so that a new unit's text is read).
  function announce(text) {
    var said = document.getElementById("work-said");
    if (!said) return;
    said.textContent = "";
    window.setTimeout(function () {
      said.textContent = text;
    }, 60);
  }

  // The comment box

  function commentBox() {
    return document.getElementById("comment-dialog");
  }

  function commentField() {
    var form = document.getElementById("decision");
    return form ? form.querySelector("[name=comment]") : null;
  }

  function boxCue(text, counted) {
    var line = document.getElementById("comment-dialog-cue");
    if (!line) return;
    line.textContent = text;
    if (counted) line.dataset.count = String((parseInt(line.dataset.count, 10) || 0) + 1);
  }

  // Open the box for ``button``'s choice (null: a comment for the label given next); ``key``: the
  // key that opened it, whose repeats are never typed.
  function openComment(button, key) {
    var dialog = commentBox();
    var work = region();
    var field = commentField();
    if (!dialog || !work || !field || dialog.open) return;
    var area = dialog.querySelector("textarea");
    var line = document.getElementById("comment-dialog-for");
    writing = {
      unit: work.dataset.unit,
      value: button ? button.dataset.value : null,
      key: key || "",
      openedAt: performance.now(),
    };
    line.textContent = "";
    if (button) {
      line.appendChild(document.createTextNode(say("comment_for_choice")));
      var cap = document.createElement("kbd");
      cap.textContent = button.dataset.key;
      var name = document.createElement("strong");
      var named = button.querySelector(".choice-name");
      name.textContent = named ? named.textContent : button.dataset.value;
      line.appendChild(cap);
      line.appendChild(name);
    } else {
      line.textContent = say("comment_for_next");
    }
    dialog.querySelector(".comment-save-text").textContent = say(button ? "save_and_label" : "save");
    boxCue("");
    area.value = field.value;
    dialog.showModal();
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
    // Open from the frame that shows it: keys sent before anyone could see it are not typed.
    window.requestAnimationFrame(function () {
      if (writing) writing.openedAt = performance.now();
    });
  }

  // Esc, Cancel, or a unit that changed under the box: nothing is kept of what was typed.
  function closeComment() {
    var dialog = commentBox();
    writing = null;
    if (dialog && dialog.open) dialog.close();
  }

  function attached(text) {
    var line = document.getElementById("comment-attached");
    if (!line) return;
    line.textContent = text.trim() ? say("comment_attached", { text: text.trim() }) : "";
    line.hidden = !text.trim();
  }

  function choiceFor(work, value) {
    return work ? work.querySelector('#decision button[data-value="' + value + '"]') : null;
  }

  // Enter or Save: the text goes into the decision form, and the label the box was opened for is
  // given (after the save in flight, if any, as a key pressed meanwhile would be).
  function saveComment() {
    var dialog = commentBox();
    var opened = writing;
    if (!dialog || !opened) return;
    var text = dialog.querySelector("textarea").value;
    var work = region();
    var field = commentField();
    if (!work || !field || work.dataset.unit !== opened.unit) {
      closeComment();
      cue(say("comment_lost"));
      return;
    }
    var button = opened.value !== null ? choiceFor(work, opened.value) : null;
    if (button && button.dataset.needsComment === "true" && !text.trim()) {
      boxCue(dialog.dataset.required || "");
      return;
    }
    field.value = text;
    attached(text);
    closeComment();
    if (!button) return;
    if (!busy) {
      press(button);
      return;
    }
    var key = opened.key || button.dataset.key;
    if (document.documentElement.hasAttribute("data-saving") && !queued) {
      queued = {
        unit: work.dataset.unit,
        key: key,
        run: function () {
          press(choiceFor(region(), opened.value));
        },
      };
    } else {
      notTaken(key, "key_busy", button);
    }
  }

  // Keys while the box is open: they type text, never a shortcut.
  function inBox(event, dialog) {
    if (event.key === "Escape") {
      event.preventDefault();
      closeComment();
      return;
    }
    if (event.key === "Tab") {
      trap(event, dialog);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || !writing) return;
    var early = performance.now() - writing.openedAt < guardMs() || (event.repeat && event.key === writing.key);
    if (early && (printable(event) || event.key === " " || event.key === "Enter")) {
      // Keys that keep coming as fast keep being refused: a burst that began before the box
      // showed ends with a pause, and typing starts after it.
      event.preventDefault();
      writing.openedAt = performance.now();
      boxCue(say("key_not_typed", { key: event.key }), true);
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing && event.target.tagName === "TEXTAREA") {
      event.preventDefault();
      saveComment();
    }
  }

  // Tab and Shift+Tab go round the box's own controls.
  function trap(event, dialog) {
    var stops = Array.prototype.filter.call(dialog.querySelectorAll("textarea, button"), function (element) {
      return !element.disabled;
    });
    if (!stops.length) return;
    var first = stops[0];
    var last = stops[stops.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
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
        value.title = item.name; // shown whole on hover when the line ends it with an ellipsis
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
          undo.appendChild(document.createTextNode(" " + (box.dataset.undoText || "")));
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
    if (writing && (!work || work.dataset.unit !== writing.unit)) {
      // The box was for a unit no longer on screen (a save refused or lost): nothing is stored.
      closeComment();
      cue(say("comment_lost"));
    }
    // The server refused a label for want of a comment: the box, for the label given next.
    if (work && work.dataset.focus === "comment") openComment(null, "");
    var note = document.getElementById("previous-note");
    if (note) announce(note.textContent);
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
    drain();
  }

  // The key kept while a label was saved: done now if its unit is still on screen, else said
  // not taken (it was meant for a unit that is gone).
  function drain() {
    var next = queued;
    queued = null;
    if (next) {
      var work = region();
      if (work && work.dataset.unit === next.unit) next.run();
      else notTaken(next.key, "key_moved_on");
    }
    if (!busy) prefetch();
  }

  // Show the prefetched unit at once and save the label of the unit that was on screen.
  function labelAhead(button, work, next) {
    var form = button.form;
    var data = new FormData(form);
    data.append(button.name, button.value);
    data.append("shown", next.dataset.unit);
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
        var follows = !refused && answer.dataset.after === shown.dataset.unit;
        if (!follows && (refused || answer.dataset.unit !== shown.dataset.unit)) {
          place(answer);
          return;
        }
        // Keep what is on screen (a comment may be under way), with the counts after this label.
        var status = answer.querySelector(".work-status");
        var old = shown.querySelector(".work-status");
        if (status && old) old.replaceWith(status.cloneNode(true));
        if (follows) {
          // The unit after the one on screen: held for the next label.
          prefetched = { after: shown.dataset.unit, html: html, at: Date.now() };
          document.documentElement.dataset.prefetched = shown.dataset.unit;
        }
      })
      .catch(function (error) {
        forget(previous.dataset.unit);
        place(previous);
        alertBox(
          error && /^\d+$/.test(error.message)
            ? say("label_not_confirmed", { status: error.message })
            : say("label_not_sent")
        );
      })
      .then(finish, finish);
  }

  // ``key``: the key pressed, if a key gave the choice.
  function press(button, key) {
    if (!button || button.disabled) return;
    if (button.dataset.needsComment === "true") {
      var field = commentField();
      if (field && !field.value.trim()) {
        openComment(button, key);
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
    var dialog = commentBox();
    if (dialog && dialog.open) {
      inBox(event, dialog);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    // A key right after the box closed may still be aimed at its text area, which no one can type
    // into any more: it is a shortcut like any other.
    if (typing(event.target) && !(dialog && dialog.contains(event.target))) {
      // The comment field of a page without the box (no script ran when it was drawn).
      if (event.key === "Escape") {
        event.target.blur();
        event.preventDefault();
      }
      return;
    }
    var keys = document.getElementById("shortcuts-dialog");
    if (keys && keys.open) return;
    var work = region();
    var button = work ? buttonFor(event, work) : null;
    if (button && button.dataset.value !== undefined && performance.now() - shownAt < guardMs()) {
      // Too soon after the unit appeared to be meant for it: a repeated or bouncing key. Not
      // taken, and said so: the person presses it again if it was meant for this unit.
      event.preventDefault();
      notTaken(event.key, "key_too_soon", button);
      return;
    }
    handle(event);
  });

  // A key kept while a label is saved, to be done once it is (see drain).
  function kept(event, work) {
    var copy = { key: event.key, code: event.code, repeat: false, preventDefault: function () {} };
    return {
      unit: work.dataset.unit,
      key: event.key,
      run: function () {
        handle(copy);
      },
    };
  }

  function handle(event) {
    var work = region();
    if (!work) return;
    if (event.key === "?") {
      event.preventDefault();
      openKeys();
      return;
    }
    var comment = (event.key === "c" || event.key === "C") && commentField() !== null;
    var button = comment ? null : buttonFor(event, work);
    if (!comment && !button) {
      if (printable(event)) notTaken(event.key, "key_unbound");
      return;
    }
    event.preventDefault();
    if (busy) {
      // Labelling ahead of the save: keep one key for when it is done; any other is said not taken.
      if (document.documentElement.hasAttribute("data-saving") && !queued) {
        queued = kept(event, work);
      } else {
        notTaken(event.key, "key_busy", button);
      }
      return;
    }
    if (comment) {
      openComment(null, event.key);
      return;
    }
    press(button, event.key);
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
    if (event.target.closest("[data-open-comment]")) openComment(null, "");
    if (event.target.closest("[data-comment-cancel]")) closeComment();
    if (event.target.closest("[data-comment-save]")) saveComment();
    // A click on a choice that needs a comment opens the box first, as its key does.
    var choice = event.target.closest("#decision button[data-needs-comment='true']");
    var field = commentField();
    if (choice && field && !field.value.trim()) {
      event.preventDefault();
      openComment(choice, "");
    }
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
    drain();
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
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : "";
    alertBox(say("server_error", { status: String(status) }));
  });
  document.addEventListener("htmx:sendError", function () {
    if (action === "decision" && pending) forget(pending);
    alertBox(say("send_error"));
  });
  document.addEventListener("DOMContentLoaded", function () {
    var dialog = commentBox();
    // Esc the browser handles itself (a phone's back gesture): a cancel like any other.
    if (dialog)
      dialog.addEventListener("cancel", function (event) {
        event.preventDefault();
        closeComment();
      });
    renderTrail(loadTrail());
    afterShow();
  });
})();
