// Keyboard for the annotation pages: one key per label, s skip, u undo, c comment, ? the keys.
// The buttons are ordinary form buttons (they work without this file); a key clicks one of them.
(function () {
  "use strict";

  var busy = false;
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

  function press(button) {
    if (!button || button.disabled) return;
    if (button.dataset.needsComment === "true") {
      var box = document.getElementById("comment");
      if (box && !box.value.trim()) {
        focusComment(COMMENT_NEEDED);
        return;
      }
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
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-open-shortcuts]")) openKeys();
  });

  document.addEventListener("htmx:beforeRequest", function () {
    busy = true;
    alertBox("");
  });
  document.addEventListener("htmx:afterRequest", function () {
    busy = false;
  });
  document.addEventListener("htmx:afterSwap", function () {
    var work = region();
    if (work && work.dataset.focus === "comment") focusComment(COMMENT_NEEDED);
  });
  document.addEventListener("htmx:responseError", function (event) {
    var status = event.detail && event.detail.xhr ? event.detail.xhr.status : "an error";
    alertBox("The server answered " + status + ". Your saved labels are safe; reload the page.");
  });
  document.addEventListener("htmx:sendError", function () {
    alertBox(
      "No connection: your last action was not confirmed. Press the key again when the connection is back; it will not be counted twice."
    );
  });
  document.addEventListener("DOMContentLoaded", function () {
    var work = region();
    if (work && work.dataset.focus === "comment") focusComment(COMMENT_NEEDED);
  });
})();
