// Forms marked data-swap-errors show the server's answer to bad input (400, 413) like any
// other answer: htmx 2 leaves 4xx answers unswapped by default, so the person saw nothing.
(function () {
  "use strict";
  var SHOWN = { 400: true, 413: true };
  document.addEventListener("htmx:beforeSwap", function (event) {
    var detail = event.detail;
    var source = detail.requestConfig && detail.requestConfig.elt;
    if (!SHOWN[detail.xhr.status] || !source || !source.closest("[data-swap-errors]")) return;
    detail.shouldSwap = true;
    detail.isError = false;
  });
})();
