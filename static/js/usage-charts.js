// Draws every Plotly figure the page carries as JSON (json_script), on load and after htmx swaps.
(function () {
  "use strict";
  function draw(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("[data-chart]").forEach(function (el) {
      var source = document.getElementById(el.dataset.chart);
      if (!source) return;
      var fig = JSON.parse(source.textContent);
      window.Plotly.react(el, fig.data, fig.layout, {
        responsive: true,
        displaylogo: false,
        modeBarButtonsToRemove: ["lasso2d", "select2d"],
        toImageButtonOptions: { format: "png", filename: el.dataset.filename || "chart", scale: 2 },
      });
      el.dataset.drawn = String(fig.data.length);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { draw(document); });
  document.addEventListener("htmx:afterSettle", function (event) { draw(event.detail.elt.parentNode || document); });
})();
