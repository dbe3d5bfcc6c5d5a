#pragma once
// Gateway keys for tenants: a random key shown once, stored as its sha256 hash
// (SPEC 4: "sha256:<hex>", compared in constant time by the engine).

#include <QString>

namespace sw::ui {

class TenantKey final {
public:
    static QString generate();                        // "sk-sw-" + 40 random base62 characters
    static QString hashReference(const QString &key); // "sha256:<hex>"
};

} // namespace sw::ui
