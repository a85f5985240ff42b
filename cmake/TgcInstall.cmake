# Installation and export of tgc::tgc (see tests/install for a downstream user).
