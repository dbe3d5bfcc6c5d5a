// The configuration editor: an invalid route is refused with the reason shown
// and nothing written; a valid edit is saved atomically to the file and applied
// to the running engine; keys go to the keychain, tenant keys are shown once.

#include "config/config_editor.h"
#include "config/config_loader.h"
#include "credentials/gateway_key.h"
#include "engine_host.h"
#include "gateway_fixture.h"
#include "shared/engine_commands.h"
#include "signal_wait.h"

#include <QComboBox>
#include <QCryptographicHash>
#include <QDir>
#include <QDoubleSpinBox>
#include <QJsonDocument>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

using namespace sw;
using namespace sw::ui;

namespace {
template <typename T> T *child(QWidget &w, const char *name) {
    auto *c = w.findChild<T *>(QString::fromLatin1(name));
    if (!c)
        qFatal("no child %s", name);
    return c;
}

config::Config startingConfig() {
    config::Config c = config::demoConfig();
    // A file-backed configuration: real-looking providers, not simulated ones.
    for (auto &p : c.providers) {
        p.demo = false;
        p.baseUrl = QStringLiteral("http://127.0.0.1:9");
    }
    return c;
}
} // namespace

class TestConfigEditor : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rejectsAnInvalidRouteAndSavesAValidOne() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("sub/config.json"));
        EngineHost host;
        test::ScriptedSecretStore engineSecrets;
        Engine::Options options;
        options.config = startingConfig();
        options.secrets = &engineSecrets;
        QString error;
        QVERIFY2(host.start(std::move(options), QStringLiteral("127.0.0.1:0"), &error), qPrintable(error));

        EngineCommands commands(&host);
        test::ScriptedSecretStore secrets;
        ConfigEditor editor(&commands, &secrets);
        editor.setConfigPath(path);
        editor.setRunningConfig(startingConfig(), 1);
        editor.show();

        auto *routes = child<QListWidget>(editor, "routeList");
        auto *candidates = child<QListWidget>(editor, "routeCandidates");
        auto *remove = child<QPushButton>(editor, "candidateRemove");
        auto *save = child<QPushButton>(editor, "saveButton");
        routes->setCurrentRow(0);
        QCOMPARE(routes->currentItem()->text(), QStringLiteral("demo"));
        QCOMPARE(candidates->count(), 2);

        // Take every candidate out of the route: invalid.
        while (candidates->count() > 0) {
            candidates->setCurrentRow(0);
            QTest::mouseClick(remove, Qt::LeftButton);
        }
        QVERIFY(editor.isDirty());
        QVERIFY(save->isEnabled());
        const QString problem = QStringLiteral("routes.demo.candidates: must list at least one model");
        QVERIFY2(editor.problems().contains(problem), qPrintable(editor.problems().join(QLatin1Char('\n'))));
        QTest::mouseClick(save, Qt::LeftButton);
        QVERIFY(!QFile::exists(path)); // nothing written
        QVERIFY(child<QLabel>(editor, "configState")->text().startsWith(QStringLiteral("Not saved")));

        // Put the OpenAI candidate back first, then the Anthropic one: a valid, reordered route.
        auto *picker = child<QComboBox>(editor, "candidatePicker");
        auto *add = child<QPushButton>(editor, "candidateAdd");
        picker->setCurrentText(QStringLiteral("sim-openai/gpt-sim"));
        QTest::mouseClick(add, Qt::LeftButton);
        picker->setCurrentText(QStringLiteral("sim-anthropic/claude-sim"));
        QTest::mouseClick(add, Qt::LeftButton);
        child<QDoubleSpinBox>(editor, "routeCeiling")->setValue(4);
        QVERIFY(editor.problems().isEmpty());
        QTest::mouseClick(save, Qt::LeftButton);
        QVERIFY(QFile::exists(path));
        QVERIFY(!editor.isDirty());
        const auto loaded = config::load(path);
        QVERIFY(loaded.ok());
        const auto route = loaded.config->routes.value(QStringLiteral("demo"));
        QCOMPARE(route.candidates,
                 (QStringList{QStringLiteral("sim-openai/gpt-sim"), QStringLiteral("sim-anthropic/claude-sim")}));
        QCOMPARE(route.maxFallbackCostMultiplier.value_or(0), 4.0);
        // No temporary file left next to it (QSaveFile renamed it into place).
        QCOMPARE(QDir(dir.filePath(QStringLiteral("sub"))).entryList(QDir::Files),
                 QStringList{QStringLiteral("config.json")});

        // And the running engine got it.
        QVERIFY(test::waitUntil([&host]() {
            QStringList running;
            host.runBlocking(
                [&running](Engine &e) { running = e.config()->routes.value(QStringLiteral("demo")).candidates; });
            return running.value(0) == QStringLiteral("sim-openai/gpt-sim");
        }));
    }

    void setKeyStoresTheSecretAndAddsTheReference() {
        test::ScriptedSecretStore secrets;
        ConfigEditor editor(nullptr, &secrets);
        editor.setRunningConfig(startingConfig(), 1);
        editor.askText = [](const QString &, const QString &, const QString &initial) {
            return initial + QStringLiteral("-main");
        };
        editor.askSecret = [](const QString &, const QString &) { return QStringLiteral("sk-secret-123"); };
        auto *providers = child<QListWidget>(editor, "providerList");
        providers->setCurrentRow(0);
        const QString id = providers->currentItem()->text();
        QTest::mouseClick(child<QPushButton>(editor, "setKey"), Qt::LeftButton);
        QVERIFY(test::waitUntil([&]() {
            return editor.workingConfig().providers.value(id).credentials.contains(QStringLiteral("keychain:") + id +
                                                                                   QStringLiteral("-main"));
        }));
        QCOMPARE(secrets.secrets.value(id + QStringLiteral("-main")), QByteArrayLiteral("sk-secret-123"));
        // The secret itself never enters the configuration.
        QVERIFY(!QJsonDocument(config::toJson(editor.workingConfig())).toJson().contains("sk-secret-123"));
    }

    void createdTenantKeyIsShownOnceAndOnlyItsHashKept() {
        ConfigEditor editor(nullptr, nullptr);
        editor.setRunningConfig(startingConfig(), 1);
        QString shownKey;
        int shown = 0;
        editor.askText = [](const QString &, const QString &, const QString &) { return QStringLiteral("alice"); };
        editor.showNewKey = [&](const QString &tenant, const QString &key) {
            QCOMPARE(tenant, QStringLiteral("alice"));
            shownKey = key;
            ++shown;
        };
        auto *tabs = editor.findChild<QTabWidget *>();
        tabs->setCurrentIndex(3);
        auto buttons = tabs->currentWidget()->findChildren<QPushButton *>();
        QPushButton *addTenant = nullptr;
        for (auto *b : buttons)
            if (b->text() == QStringLiteral("Add…"))
                addTenant = b;
        QVERIFY(addTenant);
        QTest::mouseClick(addTenant, Qt::LeftButton);
        QCOMPARE(shown, 1);
        // The same format `switchman key create` prints.
        QVERIFY(shownKey.startsWith(QStringLiteral("sm-")) && shownKey.size() == 46);
        const auto tenant = editor.workingConfig().tenants.value(QStringLiteral("alice"));
        QCOMPARE(tenant.keyHashes, QStringList{credentials::gatewayKeyHash(shownKey)});
        QVERIFY(!QJsonDocument(config::toJson(editor.workingConfig())).toJson().contains(shownKey.toUtf8()));
        QVERIFY(editor.problems().isEmpty());
    }
};

QTEST_MAIN(TestConfigEditor)
#include "test_config_editor.moc"
