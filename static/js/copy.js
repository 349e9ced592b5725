// A button that copies a text on the page, such as a new API token shown once: the button
// (data-copy: the id of the element holding the text) shows itself when this script runs, and
// its status says whether the text was copied (data-copied) or, where the browser refuses, that
// the text is selected for the person to copy by hand (data-not-copied).
(function () {
  "use strict";

  function viaSelection(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    var done = false;
    try {
      done = document.execCommand("copy");
    } catch (error) {
      done = false;
    }
    document.body.removeChild(area);
    return done ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return viaSelection(text);
      });
    }
    return viaSelection(text);
  }

  function select(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.dataset.copy);
    var status = document.getElementById(button.dataset.copy + "-status");
    if (!source) return;
    button.hidden = false;
    button.addEventListener("click", function () {
      copy(source.textContent.trim()).then(
        function () {
          if (status) status.textContent = button.dataset.copied;
        },
        function () {
          select(source);
          if (status) status.textContent = button.dataset.notCopied;
        }
      );
    });
  });
})();
