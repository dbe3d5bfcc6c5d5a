#include "first_run.h"

#include "config/config_loader.h"
#include "config/starter_config.h"

namespace sw::app {

QString firstRunNextSteps(const QString &path) {
    return QStringLiteral(
               "Next steps:\n"
               "  1. Store a provider key in the OS keychain (paste it, then press Ctrl-D):\n"
               "       switchman credential set anthropic\n"
               "       switchman credential set openai\n"
               "     or export ANTHROPIC_API_KEY / OPENAI_API_KEY before starting Switchman.\n"
               "  2. Point a client at http://127.0.0.1:4141, e.g.\n"
               "       ANTHROPIC_BASE_URL=http://127.0.0.1:4141 claude\n"
               "  3. Edit %1 to change providers, models and routes\n"
               "     (keys that start with '_' are comments), then check it with\n"
               "       switchman check-config %1\n"
               "  No key yet? Try the simulated providers: switchman --demo\n")
        .arg(path);
}

FirstRun firstRun(const QString &path) {
    FirstRun result;
    QString error;
    if (!config::writeStarterConfig(path, &error)) {
        result.message = QStringLiteral("switchman: no configuration at %1, and a starter one could not be written (%2);"
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
                     firstRunNextSteps(path);
    return result;
}

} // namespace sw::app
