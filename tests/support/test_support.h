#pragma once
// Shared helpers for tests (fakes, fake clock, waiting on signals).
