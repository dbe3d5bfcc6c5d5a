#pragma once
// The .qrc is compiled into the switchman_ui static library: its resources
// must be registered explicitly before the first ":/icons/…" lookup.

namespace sw::ui {

void ensureUiResources();

} // namespace sw::ui
