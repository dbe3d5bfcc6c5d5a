#include "gateway_runner.h"

#include <QTextStream>

#include <cstdio>

namespace sw::app {

int runGateway(const CliOptions &options, const config::Config &config) {
    Q_UNUSED(options);
    Q_UNUSED(config);
    QTextStream(stderr) << "switchman: the gateway engine is not wired yet (app/gateway_runner.cpp runGateway)\n";
    return 1;
}

QString listeningBanner(const QString &baseUrl, const config::Config &config) {
    // Name something the configuration can answer: a route first, then a model.
    QString model = QStringLiteral("MODEL");
    if (!config.routes.isEmpty())
        model = config.routes.firstKey();
    else if (!config.models.isEmpty())
        model = config.models.firstKey();
    const QString auth =
        config.tenants.isEmpty() ? QString() : QStringLiteral(" -H \"authorization: Bearer $SWITCHMAN_KEY\"");
    return QStringLiteral("Switchman listening on %1\n"
                          "Try: curl -s %1/v1/chat/completions -H 'content-type: application/json'%2 "
                          "-d '{\"model\":\"%3\",\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}]}'\n")
        .arg(baseUrl, auth, model);
}

void printListening(const QString &baseUrl, const config::Config &config) {
    QTextStream out(stdout);
    out << listeningBanner(baseUrl, config);
    out.flush();
    std::fflush(stdout);
}

} // namespace sw::app
