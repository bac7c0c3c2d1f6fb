// Click a figure to see it at full size; click again (or press Escape) to go back.
document.addEventListener("click", (event) => {
  const img = event.target.closest(".racer-figure img");
  if (img) { img.closest(".racer-figure").classList.toggle("racer-zoomed"); }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") {
    document.querySelectorAll(".racer-zoomed").forEach((f) => f.classList.remove("racer-zoomed"));
  }
});
