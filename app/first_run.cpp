#include "app/first_run.h"

#include "core/config/config_loader.h"
#include "core/config/starter_config.h"

namespace sw::app {

FirstRun firstRun(const QString &path) {
    FirstRun result;
    QString error;
    if (!config::writeStarterConfig(path, &error)) {
        result.message =
            QStringLiteral("switchman: no configuration at %1, and a starter one could not be written (%2);"
                           " starting with an empty configuration (try --demo for simulated providers)\n")
                .arg(path, error);
        return result;
    }
    result.wrote = true;
    const config::LoadResult loaded = config::load(path);
    if (!loaded.ok()) {
        // Cannot happen with the shipped starter text (a unit test loads it), but
        // never start on half a configuration.
        result.message = QStringLiteral("switchman: wrote a starter configuration to %1 but it does not load: %2\n")
                             .arg(path, loaded.errors.value(0).toString());
        return result;
    }
    result.config = *loaded.config;
    result.message = QStringLiteral("switchman: first start: wrote a starter configuration to %1\n").arg(path) +
                     config::starterNextSteps(path);
    return result;
}

} // namespace sw::app
