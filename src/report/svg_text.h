#pragma once
// Text in SVG pictures: escaping, number formats and how wide a line of text is drawn.
#include <string>

namespace fasop {

/// `text` with <, > and & escaped for XML.
std::string xml_escape(const std::string& text);

/// `value` printed with a printf `format` (one double).
std::string format_number(const char* format, double value);

/// The width in pixels `text` takes at `font_size` in a sans-serif font: DejaVu Sans's advance
/// widths (the widest of the common defaults; Arial and Helvetica are narrower), characters
/// outside ASCII as an em. Pictures size margins and place labels by it, so that text is not cut
/// or drawn over other text whichever of those fonts the viewer picks.
double text_width(const std::string& text, double font_size);

/// A round step (1, 2 or 5 times a power of ten) giving about `ticks` ticks over `span`: the
/// smallest such step of at least span / ticks.
double round_tick_step(double span, double ticks);

}  // namespace fasop
