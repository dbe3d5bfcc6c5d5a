#include "ui/shared/ui_resources.h"

#include <QtGlobal>

// Q_INIT_RESOURCE must be used outside any namespace.
static void initSwitchmanResources() {
    Q_INIT_RESOURCE(resources);
}

namespace sw::ui {

void ensureUiResources() {
    static const bool done = []() {
        initSwitchmanResources();
        return true;
    }();
    Q_UNUSED(done);
}

} // namespace sw::ui
