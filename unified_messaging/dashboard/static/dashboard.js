// unified-messaging dashboard: the little behaviour the pages need beside htmx.
// Loaded as a file (the Content-Security-Policy allows no inline script).
"use strict";

document.addEventListener("click", function (event) {
  var button = event.target.closest("button[data-copy]");
  if (!button) { return; }
  var source = document.getElementById(button.getAttribute("data-copy"));
  if (!source || !navigator.clipboard) { return; }
  navigator.clipboard.writeText(source.textContent.trim()).then(function () {
    var label = button.textContent;
    button.textContent = "Copied";
    setTimeout(function () { button.textContent = label; }, 2000);
  });
});

// A form with data-confirm asks before it is sent (revoking a key, removing an entry).
document.addEventListener("submit", function (event) {
  var question = event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) { event.preventDefault(); }
}, true);

// A file input with data-read-into puts the chosen file's text into that field: the form
// posts text (the dashboard reads no file uploads), and nothing leaves the browser before
// the form is sent.
document.addEventListener("change", function (event) {
  var input = event.target;
  var target = input.getAttribute && document.getElementById(input.getAttribute("data-read-into"));
  if (!target || !input.files || !input.files.length) { return; }
  var reader = new FileReader();
  reader.onload = function () { target.value = String(reader.result); };
  reader.readAsText(input.files[0], "utf-8");
});
