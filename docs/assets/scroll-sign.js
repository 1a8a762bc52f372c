// What scrolls sideways says so: a figure, a display formula, the course map or a code block wider
// than the screen (a phone) fades out at the edge where more of it is, until scrolled to its end
// (docs/assets/site.css, .scrolls-left and .scrolls-right).
(function () {
  var SELECTOR = ".md-typeset a.figure, .md-typeset div.arithmatex, .md-typeset .course-map-frame, .md-typeset pre > code";

  function mark(box) {
    var more = box.scrollWidth - box.clientWidth;
    box.classList.toggle("scrolls-left", more > 1 && box.scrollLeft > 1);
    box.classList.toggle("scrolls-right", more > 1 && box.scrollLeft < more - 1);
  }

  function markAll() {
    document.querySelectorAll(SELECTOR).forEach(mark);
  }

  document.addEventListener("scroll", function (event) {
    if (event.target.matches && event.target.matches(SELECTOR)) mark(event.target);
  }, true);
  window.addEventListener("resize", markAll);
  window.addEventListener("load", markAll);
  document.addEventListener("DOMContentLoaded", markAll);
})();
