// The submit form: as the accelerators change, the server's proportional defaults (the fragment
// #size-defaults, drawn by the same rule as submitting) become the placeholders of the blank vCPU and
// memory fields. Only placeholders: a value the user typed is never touched.
document.addEventListener("htmx:afterSwap", function () {
  var hint = document.getElementById("size-defaults");
  if (!hint) return;
  var pairs = [["id_vcpus", hint.dataset.vcpus], ["id_memory_gib", hint.dataset.memory]];
  pairs.forEach(function (pair) {
    var input = document.getElementById(pair[0]);
    if (input) input.placeholder = pair[1] || "";
  });
});
