import sys

from restproxy.main import main

sys.exit(main())
