import sys

from companion.bench import main

sys.exit(main())
